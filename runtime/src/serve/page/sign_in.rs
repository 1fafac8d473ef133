//! The sign-in forms in front of an approval page and a run page.

use super::{escape, shell};

/// The sign-in form an approver fills before deciding (`failed`: why the
/// last attempt was not accepted).
pub fn sign_in(link: &str, tenant: &str, run_id: &str, failed: Option<&str>) -> String {
    sign_in_form(
        &format!("/a/{link}/sign-in"),
        "Sign in to decide",
        &format!(
            "Tenant <b>{}</b> asks one of its approvers to decide run <code>{}</code>.",
            escape(tenant),
            escape(run_id)
        ),
        failed,
    )
}

/// The sign-in form in front of a run page or run list (`/r/{link}`):
/// only the tenant's approvers (or its token) read them.
pub fn sign_in_to_read(link: &str, tenant: &str, failed: Option<&str>) -> String {
    sign_in_form(
        &format!("/r/{link}/sign-in"),
        "Sign in to read this run",
        &format!(
            "Tenant <b>{}</b> shows its runs to its approvers only.",
            escape(tenant)
        ),
        failed,
    )
}

fn sign_in_form(action: &str, title: &str, intro_html: &str, failed: Option<&str>) -> String {
    let mut body = format!("<h1>{}</h1>\n", escape(title));
    body.push_str(&format!(
        "<p>{intro_html} \
Sign in with your own approver name and password (or approver token) — not the agent's token.</p>\n"
    ));
    if let Some(why) = failed {
        body.push_str(&format!("<p id=\"error\"><b>{}</b></p>\n", escape(why)));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"{}\">\n\
<p><label>Name <input type=\"text\" name=\"name\" autocomplete=\"username\" required></label></p>\n\
<p><label>Password or token <input type=\"password\" name=\"secret\" autocomplete=\"current-password\" required></label></p>\n\
<button type=\"submit\" name=\"action\" value=\"sign-in\">Sign in</button>\n\
</form>",
        escape(action)
    ));
    shell(title, &body)
}

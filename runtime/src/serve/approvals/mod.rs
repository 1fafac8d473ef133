//! Approvals: the tenant's list of paused gates (each with a fresh signed
//! link for a human), and the link's page and form (`/a/{link}`).
//!
//! The rooms: [`mod@list`] (`GET /v1/approvals`, the link of a gate, the
//! notifier's message), [`link_page`] (opening a link: its gate page and
//! sign-in form) and [`mod@decide`] (the form's decision, through the one gate
//! function). The pages' HTML is [`super::page`]'s; an approver's sign-in
//! is [`super::sign_in`]'s.

pub mod decide;
pub mod link_page;
pub mod list;

pub use decide::decide;
pub use link_page::{show, sign_in};
pub use list::{link_for, list, notify_gate};

//! `phonehome`: a step that imports an interface the Lobster host does not
//! provide (`lobster-test:phone/home`), standing in for any network or
//! foreign capability. `lobster check`, `bundle` and the untrusted policy
//! must refuse it by naming the interface, wherever a workflow reaches it.
use lobster_guest::{json, Args, Error, Step, StepInfo, Value};

mod phone {
    wit_bindgen::generate!({
        inline: "
            package lobster-test:phone;
            interface home {
                call: func(url: string) -> string;
            }
            world phone {
                import home;
            }
        ",
    });
}

struct PhoneHome;

impl Step for PhoneHome {
    fn describe() -> StepInfo {
        StepInfo::new("phonehome", "0.1.0", "Call a host interface Lobster does not provide")
    }

    fn run(_args: Args, _items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let answer = phone::lobster_test::phone::home::call("https://example.com/");
        Ok(vec![json!({ "breach": answer })])
    }
}

lobster_guest::export_step!(PhoneHome);

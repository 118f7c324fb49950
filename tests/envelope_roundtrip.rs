//! Round trips through the canonical envelope: Wise Agents → X → Wise Agents gives back the
//! same six fields (a null context comes back as the default), and X → Wise Agents → X keeps
//! every field that maps onto Wise Agents.

mod common;

use common::generate;
use proptest::prelude::*;
use stomp_agent_bridge::envelope::SystemClock;
use stomp_agent_bridge::envelope::codecs::{Codecs, Framework, Origin};
use stomp_agent_bridge::envelope::wiseagents::{self, WiseMessage};
use stomp_agent_bridge::envelope::{Direction, Envelope};

const OTHERS: [Framework; 3] = [Framework::Civitas, Framework::Vox, Framework::PenguiFlow];

fn name() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[A-Za-z][A-Za-z0-9_.-]{0,15}")
}

fn wise_message() -> impl Strategy<Value = WiseMessage> {
    generate::wise_message(name())
}

fn direction() -> impl Strategy<Value = Direction> {
    prop::sample::select(vec![Direction::Request, Direction::Response])
}

fn via(codecs: &mut Codecs, x: Framework, wa: &WiseMessage, direction: Direction) -> WiseMessage {
    let origin = Origin { direction, recipient: "Proxied", content_type: None };
    let env = codecs
        .decode(Framework::WiseAgents, wa.to_yaml().as_bytes(), origin, &mut SystemClock)
        .expect("WA decodes");
    let out = codecs.encode(x, &env, None, &mut SystemClock).expect("encodes to X");
    let origin = Origin { direction, recipient: "Proxied", content_type: out.content_type };
    let back = codecs
        .decode(x, &out.body, origin, &mut SystemClock)
        .unwrap_or_else(|e| panic!("{x} decodes its own body: {e}"));
    let yaml = codecs.encode(Framework::WiseAgents, &back, None, &mut SystemClock).expect("back to WA").body;
    WiseMessage::parse(&yaml).expect("WA body reads")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn wiseagents_to_x_and_back_keeps_the_six_fields(wa in wise_message(), direction in direction()) {
        let mut codecs = Codecs::default();
        let mut want = wa.clone();
        want.context_name = Some(wa.context_name.clone().unwrap_or_else(|| "default".into()));
        for x in OTHERS {
            prop_assert_eq!(&via(&mut codecs, x, &wa, direction), &want, "via {}", x);
        }
    }

    #[test]
    fn x_to_wiseagents_and_back_keeps_every_mapped_field(wa in wise_message(), direction in direction()) {
        // Start from X: the body X would carry for this message, then X → WA → X.
        let mut codecs = Codecs::default();
        for x in OTHERS {
            let origin = Origin { direction, recipient: "Proxied", content_type: None };
            let env = codecs.decode(Framework::WiseAgents, wa.to_yaml().as_bytes(), origin, &mut SystemClock).unwrap();
            let x_body = codecs.encode(x, &env, None, &mut SystemClock).unwrap();
            let x_origin = Origin { direction, recipient: "Proxied", content_type: x_body.content_type };
            let first = codecs.decode(x, &x_body.body, x_origin, &mut SystemClock).unwrap();
            let yaml = codecs.encode(Framework::WiseAgents, &first, None, &mut SystemClock).unwrap().body;
            let through_wa = codecs.decode(Framework::WiseAgents, &yaml, Origin { direction, ..origin }, &mut SystemClock).unwrap();
            let x_again = codecs.encode(x, &through_wa, None, &mut SystemClock).unwrap();
            let second = codecs.decode(x, &x_again.body, x_origin, &mut SystemClock).unwrap();
            prop_assert_eq!(mapped(&second), mapped(&first), "{} → WA → {}", x, x);
        }
    }
}

/// The fields of an envelope that Wise Agents can carry (a null context as the default).
fn mapped(env: &Envelope) -> WiseMessage {
    wiseagents::from_envelope(env, "default")
}

#[test]
fn every_valid_vector_survives_each_framework() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/vectors/wiseagents");
    let mut codecs = Codecs::default();
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(wa) = WiseMessage::parse(&std::fs::read(&path).unwrap_or_default()) else { continue };
        let mut want = wa.clone();
        want.extra.clear();
        for x in OTHERS {
            for direction in [Direction::Request, Direction::Response] {
                assert_eq!(via(&mut codecs, x, &wa, direction), want, "{} via {x}", path.display());
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 14 * 6);
}

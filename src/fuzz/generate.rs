//! The strategy that generates sequences of operations for a target's repertoire (the
//! behaviours its profile maps), weighed toward what the campaign has not met yet.

use proptest::prelude::*;
use proptest::strategy::Union;
use serde::Serialize;

use super::ops::{Behaviour, Op, PendingKind, Probe, Routine};
use crate::client::profile::Profile;
use crate::fuzz::guidance::{kind_of, Bias};

/// Operations that only make sense when the agent can be driven into one of these
/// behaviours (by the operation's serde name): without them the operation could only ever
/// name something that does not exist, on every server, so it would test nothing the
/// profile-independent stale operations do not.
const NEEDS: &[(&str, &[Behaviour])] = &[
    (
        "confirm",
        &[
            Behaviour::ToolAsk,
            Behaviour::ToolResultConfirm,
            Behaviour::ToolClient,
        ],
    ),
    ("confirmResult", &[Behaviour::ToolResultConfirm]),
    ("completeClientTool", &[Behaviour::ToolClient]),
    ("answer", &[Behaviour::Input, Behaviour::InputThenWait]),
    (
        "completeInput",
        &[Behaviour::Input, Behaviour::InputThenWait],
    ),
    ("resume", &[Behaviour::ErrorResumable]),
    // Pending messages become turns the model expects to wait for a cancel.
    ("setPending", &[Behaviour::Long]),
];

/// What the fuzzer may generate against a target: the agent behaviours its profile maps.
/// A turn is only started with a mapped behaviour, and an operation that needs a behaviour
/// the profile lacks is never generated — not even while shrinking.
#[derive(Debug, Clone, PartialEq)]
pub struct Repertoire {
    behaviours: Vec<Behaviour>,
    /// IDs of the catalog cases sequences may run as operations (`case/<ID>`).
    cases: Vec<String>,
    /// How operation kinds are weighed besides their base weights (toward the states they
    /// have not met: [`super::guidance`]).
    bias: Bias,
}

impl Repertoire {
    /// The behaviours `profile` maps.
    pub fn of(profile: &Profile) -> Repertoire {
        Repertoire {
            behaviours: Behaviour::ALL
                .into_iter()
                .filter(|b| profile.behaviour(b.key()).is_some())
                .collect(),
            cases: Vec::new(),
            bias: Bias::Uniform,
        }
    }

    /// The same repertoire, also running the catalog cases `ids` as operations.
    pub fn with_cases(mut self, ids: Vec<String>) -> Repertoire {
        self.cases = ids;
        self
    }

    /// The same repertoire with its operation kinds weighed by `bias`.
    pub fn biased(&self, bias: Bias) -> Repertoire {
        Repertoire {
            behaviours: self.behaviours.clone(),
            cases: self.cases.clone(),
            bias,
        }
    }

    /// `base` weighed by the bias for `kind`.
    fn weight(&self, kind: &str, base: u32) -> u32 {
        self.bias.weight(kind, base)
    }

    pub fn has(&self, behaviour: Behaviour) -> bool {
        self.behaviours.contains(&behaviour)
    }

    /// Whether operations of `kind` (serde name) can be generated.
    fn allows(&self, kind: &str) -> bool {
        NEEDS
            .iter()
            .find(|(needy, _)| *needy == kind)
            .is_none_or(|(_, needs)| needs.iter().any(|b| self.has(*b)))
    }

    /// The operation kinds left out because the profile lacks their behaviours, each with
    /// what it needs (for the campaign summary).
    pub fn left_out(&self) -> Vec<String> {
        let turns = Behaviour::ALL
            .into_iter()
            .filter(|b| !self.has(*b))
            .map(|b| format!("startTurn {}", b.key()));
        let needy = NEEDS
            .iter()
            .filter(|(kind, _)| !self.allows(kind))
            .map(|(kind, needs)| {
                let keys: Vec<&str> = needs.iter().map(|b| b.key()).collect();
                format!("{kind} (needs {})", keys.join(" or "))
            });
        turns.chain(needy).collect()
    }
}

/// A weighted choice of `arms`, keeping only the kinds `repertoire` allows.
fn choice(repertoire: &Repertoire, arms: Vec<(&str, u32, BoxedStrategy<Op>)>) -> BoxedStrategy<Op> {
    Union::new_weighted(
        arms.into_iter()
            .filter(|(kind, _, _)| repertoire.allows(kind))
            .map(|(kind, weight, arm)| (repertoire.weight(kind, weight), arm))
            .collect(),
    )
    .boxed()
}

/// The behaviours to start turns with, weighted towards those that wait for a client;
/// `None` when the profile maps none.
fn behaviour(repertoire: &Repertoire) -> Option<BoxedStrategy<Behaviour>> {
    // Issue 29's agent-state behaviours come at half the weight of the others: six of
    // them, all of which just end, beside the ten that drive the chat's states.
    let weight = |b: Behaviour| match b {
        Behaviour::Long => 6,
        Behaviour::ToolAsk | Behaviour::Input => 4,
        Behaviour::Activity
        | Behaviour::Background
        | Behaviour::BackgroundDone
        | Behaviour::Meta
        | Behaviour::MetaAgain
        | Behaviour::AgentDescription => 1,
        _ => 2,
    };
    let arms: Vec<(u32, Just<Behaviour>)> = Behaviour::ALL
        .into_iter()
        .filter(|b| repertoire.has(*b))
        .map(|b| (weight(b), Just(b)))
        .collect();
    (!arms.is_empty()).then(|| Union::new_weighted(arms).boxed())
}

/// One of `arms`, each weighed by the bias for its kind (`prefix/` and its trace name).
fn weighed<T: Clone + std::fmt::Debug + Serialize + 'static>(
    repertoire: &Repertoire,
    prefix: &str,
    tag: &str,
    arms: Vec<BoxedStrategy<T>>,
    names: Vec<T>,
) -> (u32, BoxedStrategy<T>) {
    let weights: Vec<u32> = names
        .iter()
        .map(|name| repertoire.weight(&format!("{prefix}/{}", kind_of(name, tag)), 1))
        .collect();
    let total = weights.iter().sum::<u32>().max(1);
    // The group's own weight follows its members' mean bias (at least 1).
    let mean = total.div_ceil(weights.len().max(1) as u32);
    let union = Union::new_weighted(weights.into_iter().zip(arms).collect()).boxed();
    (mean, union)
}

fn probe(repertoire: &Repertoire) -> (u32, BoxedStrategy<Probe>) {
    let arms = Probe::ALL.iter().map(|p| Just(*p).boxed()).collect();
    weighed(repertoire, "probe", "", arms, Probe::ALL.to_vec())
}

fn routine(repertoire: &Repertoire) -> (u32, BoxedStrategy<Routine>) {
    let arms = vec![
        (2u8..6).prop_map(|n| Routine::Burst { n }).boxed(),
        any::<bool>()
            .prop_map(|turn| Routine::DisposeThenList { turn })
            .boxed(),
        Just(Routine::Window).boxed(),
        Just(Routine::CreateChat).boxed(),
        Just(Routine::AnswerUnsubscribed).boxed(),
        any::<bool>()
            .prop_map(|root| Routine::Handshake { root })
            .boxed(),
        (2u8..5).prop_map(|n| Routine::Queue { n }).boxed(),
        Just(Routine::Resources).boxed(),
        Just(Routine::Watch).boxed(),
        Just(Routine::Tree).boxed(),
        Just(Routine::Config).boxed(),
        Just(Routine::StealTerminal).boxed(),
        Just(Routine::Authenticate).boxed(),
        Just(Routine::SubscribeRoot).boxed(),
        Just(Routine::ChatOutside).boxed(),
        Just(Routine::ChooseOption).boxed(),
        Just(Routine::LeaveOnReconnect).boxed(),
        Just(Routine::ChatSources).boxed(),
        Just(Routine::MoveChat).boxed(),
        Just(Routine::PromoteDefault).boxed(),
        Just(Routine::RemoveDirectory).boxed(),
        Just(Routine::Changeset).boxed(),
        Just(Routine::Annotations).boxed(),
        Just(Routine::AgentState).boxed(),
        Just(Routine::Versions).boxed(),
        Just(Routine::FailedLifecycle).boxed(),
        Just(Routine::MalformedTitle).boxed(),
        Just(Routine::QueueOnIdle).boxed(),
        Just(Routine::ToolOrder).boxed(),
    ];
    weighed(
        repertoire,
        "routine",
        "routine",
        arms,
        Routine::ALL.to_vec(),
    )
}

fn kind() -> impl Strategy<Value = PendingKind> {
    prop_oneof![Just(PendingKind::Queued), Just(PendingKind::Steering)]
}

/// One dispatching operation the repertoire allows, weighted towards the ones that move
/// state.
// Kept whole (over the ~80-line aim): a table of weighted operation arms.
fn single(repertoire: &Repertoire) -> BoxedStrategy<Op> {
    choice(repertoire, single_arms(repertoire))
}

/// Every operation kind the repertoire can generate, by its trace name (`probe/…` and
/// `routine/…` for probes and routines): the operations of the coverage map's universe.
pub fn kinds(repertoire: &Repertoire) -> Vec<String> {
    let singles = single_arms(repertoire)
        .into_iter()
        .filter(|(kind, _, _)| repertoire.allows(kind))
        .map(|(kind, _, _)| kind.to_owned());
    let probes = Probe::ALL
        .iter()
        .map(|p| format!("probe/{}", kind_of(p, "")));
    let routines = Routine::ALL
        .iter()
        .map(|r| format!("routine/{}", kind_of(r, "routine")));
    let cases = repertoire.cases.iter().map(|id| format!("case/{id}"));
    singles.chain(probes).chain(routines).chain(cases).collect()
}

/// One of the repertoire's catalog cases, each weighed by the bias for `case/<ID>`; `None`
/// without cases.
fn case(repertoire: &Repertoire) -> Option<(u32, BoxedStrategy<Op>)> {
    if repertoire.cases.is_empty() {
        return None;
    }
    let weights: Vec<u32> = repertoire
        .cases
        .iter()
        .map(|id| repertoire.weight(&format!("case/{id}"), 1))
        .collect();
    let mean = weights
        .iter()
        .sum::<u32>()
        .max(1)
        .div_ceil(weights.len() as u32);
    let arms = weights
        .into_iter()
        .zip(&repertoire.cases)
        .map(|(weight, id)| (weight, Just(Op::Case { case: id.clone() }).boxed()))
        .collect();
    Some((mean, Union::new_weighted(arms).boxed()))
}

/// The weighted arms of [`single`], by operation kind.
fn single_arms(repertoire: &Repertoire) -> Vec<(&'static str, u32, BoxedStrategy<Op>)> {
    let client = || 0u8..3;
    let mut arms = vec![
        (
            "cancel",
            3,
            (client(), any::<bool>())
                .prop_map(|(client, stale)| Op::Cancel { client, stale })
                .boxed(),
        ),
        (
            "confirm",
            3,
            (client(), any::<bool>(), prop::bool::weighted(0.2))
                .prop_map(|(client, approve, stale)| Op::Confirm {
                    client,
                    approve,
                    stale,
                })
                .boxed(),
        ),
        (
            "confirmResult",
            2,
            (client(), any::<bool>())
                .prop_map(|(client, approve)| Op::ConfirmResult { client, approve })
                .boxed(),
        ),
        (
            "completeClientTool",
            2,
            client()
                .prop_map(|client| Op::CompleteClientTool { client })
                .boxed(),
        ),
        (
            "answer",
            2,
            (client(), prop::bool::weighted(0.8))
                .prop_map(|(client, valid)| Op::Answer { client, valid })
                .boxed(),
        ),
        (
            "completeInput",
            2,
            (client(), any::<bool>())
                .prop_map(|(client, accept)| Op::CompleteInput { client, accept })
                .boxed(),
        ),
        (
            "setPending",
            4,
            (client(), kind(), 0u8..4)
                .prop_map(|(client, kind, id)| Op::SetPending { client, kind, id })
                .boxed(),
        ),
        (
            "removePending",
            2,
            (client(), kind(), 0u8..4)
                .prop_map(|(client, kind, id)| Op::RemovePending { client, kind, id })
                .boxed(),
        ),
        (
            "reorder",
            1,
            client().prop_map(|client| Op::Reorder { client }).boxed(),
        ),
        (
            "draft",
            1,
            client().prop_map(|client| Op::Draft { client }).boxed(),
        ),
        (
            "rename",
            2,
            client().prop_map(|client| Op::Rename { client }).boxed(),
        ),
        (
            "setDirectory",
            1,
            (client(), any::<bool>())
                .prop_map(|(client, inside)| Op::SetDirectory { client, inside })
                .boxed(),
        ),
        (
            "truncate",
            1,
            (client(), any::<bool>())
                .prop_map(|(client, keep_first)| Op::Truncate { client, keep_first })
                .boxed(),
        ),
        (
            "resume",
            1,
            client().prop_map(|client| Op::Resume { client }).boxed(),
        ),
        (
            "serverOnly",
            1,
            client()
                .prop_map(|client| Op::ServerOnly { client })
                .boxed(),
        ),
    ];
    if let Some(behaviour) = behaviour(repertoire) {
        let start = (client(), behaviour)
            .prop_map(|(client, behaviour)| Op::StartTurn { client, behaviour });
        arms.insert(0, ("startTurn", 6, start.boxed()));
    }
    arms
}

/// One operation: a dispatching one, two at once, a reconnect or a checkpoint.
pub fn op(repertoire: &Repertoire) -> impl Strategy<Value = Op> {
    let single = single(repertoire);
    let (probe_bias, probe) = probe(repertoire);
    let (routine_bias, routine) = routine(repertoire);
    // Routines weigh four times their group's bias (probes three times): at three, issue
    // 25's routines doubling their number kept each coming about as often as before; issue
    // 29's seven more (24 in all) would have made each come 17/24 as often, and four times
    // keeps each about where it was (the group from 6% to 8% of the operations).
    let mut arms = vec![
        (36, single.clone()),
        (
            4,
            (single.clone(), single)
                .prop_map(|(first, second)| Op::Together {
                    first: Box::new(first),
                    second: Box::new(second),
                })
                .boxed(),
        ),
        (
            1,
            (0u8..3).prop_map(|client| Op::Reconnect { client }).boxed(),
        ),
        (
            3 * probe_bias,
            (0u8..3, probe)
                .prop_map(|(client, probe)| Op::Probe { client, probe })
                .boxed(),
        ),
        (
            4 * routine_bias,
            (0u8..3, routine)
                .prop_map(|(client, routine)| Op::Routine { client, routine })
                .boxed(),
        ),
        (1, Just(Op::Checkpoint).boxed()),
    ];
    // A catalog case weighs as a probe does: it is one, written as a suite case.
    if let Some((case_bias, case)) = case(repertoire) {
        arms.push((3 * case_bias, case));
    }
    Union::new_weighted(arms)
}

/// A sequence of 1..=`max` operations the repertoire allows.
pub fn sequence(max: usize, repertoire: &Repertoire) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(repertoire), 1..=max.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// The serde name of an operation and of the operations inside it.
    fn kinds(op: &Op) -> Vec<String> {
        let name = serde_json::to_value(op).expect("serialises")["op"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match op {
            Op::Together { first, second } => [kinds(first), kinds(second)].concat(),
            _ => vec![name],
        }
    }

    fn behaviours(op: &Op) -> Vec<Behaviour> {
        match op {
            Op::StartTurn { behaviour, .. } => vec![*behaviour],
            Op::Together { first, second } => [behaviours(first), behaviours(second)].concat(),
            _ => Vec::new(),
        }
    }

    /// Operations of `repertoire`'s sequences, generated and (every tenth) shrunk all the way.
    fn sample(repertoire: &Repertoire) -> Vec<Op> {
        let mut runner = TestRunner::deterministic();
        let strategy = sequence(30, repertoire);
        let mut ops = Vec::new();
        for round in 0..300 {
            let mut tree = strategy.new_tree(&mut runner).expect("a sequence");
            ops.extend(tree.current());
            if round % 10 == 0 {
                while tree.simplify() {
                    ops.extend(tree.current());
                }
            }
        }
        ops
    }

    #[test]
    fn a_profile_without_tool_behaviours_gets_no_tool_operations() {
        let mut profile = Profile::scripted().expect("built-in profile");
        profile
            .behaviours
            .retain(|key, _| !key.starts_with("tool-"));
        let repertoire = Repertoire::of(&profile);
        let ops = sample(&repertoire);
        let tool_ops = ["confirm", "confirmResult", "completeClientTool"];
        let kinds: Vec<String> = ops.iter().flat_map(kinds).collect();
        assert!(
            !kinds.iter().any(|k| tool_ops.contains(&k.as_str())),
            "tool-call operations generated without a tool behaviour"
        );
        let started: Vec<Behaviour> = ops.iter().flat_map(behaviours).collect();
        assert!(started.iter().all(|b| !b.key().starts_with("tool-")));
        assert!(
            started.contains(&Behaviour::Input) && kinds.iter().any(|k| k == "answer"),
            "the behaviours the profile has are still generated"
        );
        let left_out = repertoire.left_out();
        for needle in ["startTurn tool-ask", "confirm (needs", "completeClientTool"] {
            assert!(
                left_out.iter().any(|l| l.starts_with(needle)),
                "{needle} missing from {left_out:?}"
            );
        }
    }

    #[test]
    fn the_full_profile_leaves_nothing_out_and_names_every_needy_kind_right() {
        let repertoire = Repertoire::of(&Profile::scripted().expect("built-in profile"));
        assert_eq!(repertoire.left_out(), Vec::<String>::new());
        let kinds: Vec<String> = sample(&repertoire).iter().flat_map(kinds).collect();
        for (kind, _) in NEEDS {
            assert!(
                kinds.iter().any(|k| k == kind),
                "{kind} is not an operation name"
            );
        }
    }

    #[test]
    fn a_profile_without_behaviours_starts_no_turns() {
        let mut profile = Profile::scripted().expect("built-in profile");
        profile.behaviours.clear();
        let ops = sample(&Repertoire::of(&profile));
        let kinds: Vec<String> = ops.iter().flat_map(kinds).collect();
        assert!(!kinds.iter().any(|k| k == "startTurn"));
        assert!(kinds.iter().any(|k| k == "rename"), "the rest still runs");
    }
}

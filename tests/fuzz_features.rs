//! Issue 25's feature routines and issue 24's routines for its reach misses (a chosen
//! confirmation option, a reconnect leaving a session), one operation at a time: against the correct host each runs
//! (its requests reach the host) and finds nothing; against each of its faults it names the
//! fault's rule; where the feature is not advertised (no workspace, no `[auth]`) it does
//! nothing, whatever the host does wrong. Campaigns finding the same faults and their
//! traces replaying: tests/fuzz_reach.rs.

use std::time::Duration;

use ahpspec::fuzz::ops::{Op, Routine};
use ahpspec::fuzz::{execute, ExecConfig, Execution, Target};
use ahpspec::host::{Fault, HostConfig};
use ahpspec::reach::ReachConfig;
use ahpspec::target::{start_host, Decided};

fn config() -> ExecConfig {
    let standard = ReachConfig::standard().expect("profile and schemas");
    ExecConfig {
        timeout: Duration::from_secs(2),
        settle: Duration::from_millis(3),
        clients: 2,
        profile: standard.profile,
        schemas: standard.schemas,
        checkpoint_every: 10,
        exclude: Default::default(),
        known: Default::default(),
        catalog: None,
    }
}

/// `routine` on client 1, then a checkpoint, against `target`. The routine operation counts
/// one, and each request it made one more.
async fn run(routine: Routine, target: &Target, cfg: &ExecConfig) -> Execution {
    let ops = [Op::Routine { client: 1, routine }, Op::Checkpoint];
    execute(&ops, target, cfg).await.expect("the sequence runs")
}

fn built_in(fault: Option<Fault>) -> Target {
    Decided::Host(fault.into()).for_sequences(None)
}

/// Whether a client of the run sent a request for `method`.
fn sent(run: &Execution, method: &str) -> bool {
    let needle = format!("\"method\":\"{method}\"");
    run.frames
        .iter()
        .any(|f| f.direction == "sent" && f.text.contains(&needle))
}

const ROUTINES: [(Routine, &[(Fault, &str)]); 22] = [
    (
        Routine::Resources,
        &[
            (Fault::ListFileOk, "RES-002"),
            (Fault::AppendTruncates, "RES-008"),
            (Fault::CopyOverwritesAnyway, "RES-009"),
        ],
    ),
    (
        Routine::Watch,
        &[
            (Fault::WatchUriReused, "RES-007"),
            (Fault::WatchIgnoresExcludes, "RES-013"),
        ],
    ),
    (
        Routine::Tree,
        &[
            (Fault::MkdirNoParents, "RES-004"),
            (Fault::ResolveDirAsFile, "RES-010"),
            (Fault::ResolveMissingWrongCode, "RES-001"),
            (Fault::StaleIfMatchWrites, "RES-003"),
            (Fault::DeleteNonEmptyOk, "RES-005"),
        ],
    ),
    (
        Routine::Config,
        &[
            (Fault::CompletionValuesUnaccepted, "CONFIG-003"),
            (Fault::ConfigMergeReplaces, "ROOT-012"),
        ],
    ),
    (
        Routine::StealTerminal,
        &[(Fault::ClaimFromAnyone, "TERM-003")],
    ),
    (
        Routine::Authenticate,
        &[
            (Fault::WrongTokenAccepted, "AUTH-001"),
            (Fault::AuthenticateAnything, "AUTH-001"),
            (Fault::MalformedAuthenticateAccepted, "AUTH-001"),
            (Fault::ZeroExpiryAccepted, "TRANSPORT-009"),
            (Fault::ValidTokenRefused, "AUTH-004"),
        ],
    ),
    (
        Routine::SubscribeRoot,
        &[
            (Fault::RootSnapshotMisnamed, "SUB-001"),
            (Fault::RootListsSessions, "ROOT-001"),
        ],
    ),
    (
        Routine::ChatOutside,
        &[(Fault::ChatOutsideDirectoryAccepted, "CHAT-007")],
    ),
    (
        Routine::ChooseOption,
        &[(Fault::SelectedOptionDropped, "TOOL-005")],
    ),
    (
        Routine::LeaveOnReconnect,
        &[(Fault::ReconnectKeepsActiveClient, "RECONNECT-008")],
    ),
    // Issue 29's features.
    (
        Routine::ChatSources,
        &[
            (Fault::UnsupportedSourceAccepted, "CHAT-FORK-001"),
            (Fault::ForkForeignSourceAccepted, "CHAT-FORK-002"),
            (Fault::ForkCopiesAllTurns, "CHAT-FORK-003"),
            (Fault::SideChatCopiesHistory, "CHAT-FORK-004"),
            (Fault::ForkOriginForgotten, "CHAT-FORK-005"),
        ],
    ),
    (
        Routine::MoveChat,
        &[
            (Fault::MoveNonMovableAccepted, "CHAT-MOVE-001"),
            (Fault::MoveAnswersOldOwner, "CHAT-MOVE-002"),
            (Fault::ReorderLeavesOneOut, "SESSION-005"),
        ],
    ),
    (
        Routine::PromoteDefault,
        &[(Fault::PromotedDefaultMovable, "SESSION-004")],
    ),
    (
        Routine::RemoveDirectory,
        &[
            (Fault::PrimaryRemovalAccepted, "SESSION-012"),
            (Fault::ChatDirectoryRemovalCascades, "CHAT-008"),
        ],
    ),
    (
        Routine::Changeset,
        &[
            (Fault::ChangesetServerActionAccepted, "CHANGESET-001"),
            (Fault::ChangesetReviewRefused, "CHANGESET-001"),
            (Fault::ChangesetUnknownOperationAccepted, "CHANGESET-002"),
            (Fault::ChangesetScopeIgnored, "CHANGESET-002"),
            (Fault::ChangesetChatUnreported, "CHANGESET-003"),
            (Fault::ChangesetNeverReady, "CHANGESET-003"),
            (Fault::RevertLeavesFile, "CHANGESET-004"),
        ],
    ),
    (
        Routine::Annotations,
        &[
            (Fault::AnnotationEntryRefused, "ANNOTATION-001"),
            (Fault::AnnotationEmptied, "ANNOTATION-002"),
        ],
    ),
    (
        Routine::AgentState,
        &[
            (Fault::ActivityUnannounced, "CHAT-004"),
            (Fault::BackgroundWorkEndsWithTurn, "CHAT-009"),
            (Fault::SessionMetaMerged, "SESSION-016"),
            (Fault::AgentsChangedUnannounced, "ROOT-013"),
        ],
    ),
    // Issue 24's reach misses.
    (
        Routine::Versions,
        &[
            (Fault::KnownMinorsOnly, "VERSION-003"),
            (Fault::NewActionsToOldClient, "VERSION-009"),
        ],
    ),
    (
        Routine::FailedLifecycle,
        &[(Fault::FailedAsCreationFailed, "LIFECYCLE-004")],
    ),
    (
        Routine::MalformedTitle,
        &[(Fault::MalformedTitleApplied, "DISPATCH-007")],
    ),
    (
        Routine::QueueOnIdle,
        &[(Fault::QueuedIdleKept, "PENDING-004")],
    ),
    (
        Routine::ToolOrder,
        &[
            (Fault::ToolDeltaBeforeStart, "TOOL-002"),
            (Fault::InputEntryStaleTurn, "SESSION-008"),
        ],
    ),
];

#[tokio::test]
async fn each_feature_routine_passes_the_correct_host_and_names_its_faults_rules() {
    let cfg = config();
    let mut wrong = Vec::new();
    for (routine, faults) in ROUTINES {
        let clean = run(routine, &built_in(None), &cfg).await;
        assert_eq!(clean.failure, None, "{routine:?} on the correct host");
        assert!(
            clean.operations > 1,
            "{routine:?} reached the host: {} operations",
            clean.operations
        );
        for (fault, rule) in faults {
            let faulty = run(routine, &built_in(Some(*fault)), &cfg).await;
            let found = faulty.failure.as_ref().map(|f| f.rule.id());
            if found != Some(*rule) {
                wrong.push(format!(
                    "{routine:?} with {}: {:?}",
                    fault.name(),
                    faulty.failure
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn the_resource_watch_and_chat_routines_run_on_the_clients_connections() {
    let cfg = config();
    let resources = run(Routine::Resources, &built_in(None), &cfg).await;
    for method in [
        "resourceMkdir",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
    ] {
        assert!(sent(&resources, method), "{method} in the run's frames");
    }
    let watch = run(Routine::Watch, &built_in(None), &cfg).await;
    for method in ["createResourceWatch", "resourceWrite", "resourceDelete"] {
        assert!(sent(&watch, method), "{method} in the run's frames");
    }
    let chat = run(Routine::ChatOutside, &built_in(None), &cfg).await;
    assert!(sent(&chat, "createChat"));
}

/// A server somebody else runs, with no workspace in the profile: the resource routine has
/// no directory to work in and does nothing, even on a host that lists files.
#[tokio::test]
async fn no_workspace_no_resource_commands() {
    let host = start_host(HostConfig::with_fault(Fault::ListFileOk))
        .await
        .expect("the host starts");
    let target = Target::Url(host.url().to_owned());
    let cfg = config();
    assert_eq!(cfg.profile.workspace, None);
    let outcome = run(Routine::Resources, &target, &cfg).await;
    host.shutdown().await;
    assert_eq!(outcome.failure, None);
    assert!(!sent(&outcome, "resourceList"), "no resource command sent");
}

/// Without the profile's `[auth]` the authenticate routine sends nothing; with it, the token
/// reaches no frame of the run (the routine's own connection is not the run's).
#[tokio::test]
async fn authenticate_needs_the_profiles_auth_and_keeps_the_token_out_of_the_run() {
    let mut cfg = config();
    let token = cfg.profile.auth.as_ref().expect("[auth]").token.clone();
    let faulty = built_in(Some(Fault::WrongTokenAccepted));
    let with = run(Routine::Authenticate, &faulty, &cfg).await;
    assert!(with.failure.is_some());
    assert!(
        with.frames.iter().all(|f| !f.text.contains(&token)),
        "the token stays out of the run's frames"
    );
    cfg.profile.auth = None;
    let without = run(Routine::Authenticate, &faulty, &cfg).await;
    assert_eq!(without.failure, None, "no [auth]: nothing judged");
}

/// A profile that does not promise the tool call's options: no option is chosen, even on a
/// host that drops the choice.
#[tokio::test]
async fn choose_option_needs_the_profiles_promise_of_options() {
    let mut cfg = config();
    let faulty = built_in(Some(Fault::SelectedOptionDropped));
    cfg.profile.behaviours.remove("tool-ask");
    let without = run(Routine::ChooseOption, &faulty, &cfg).await;
    assert_eq!(without.failure, None);
    assert!(
        !without
            .frames
            .iter()
            .any(|f| f.text.contains("selectedOptionId")),
        "nothing chosen"
    );
}

/// A profile that names no dynamic property and no root property: the configuration routine
/// judges nothing, even on a host that breaks both rules.
#[tokio::test]
async fn config_needs_the_profiles_properties() {
    let mut cfg = config();
    let faults = [
        Fault::CompletionValuesUnaccepted,
        Fault::ConfigMergeReplaces,
    ];
    let faulty = Decided::Host(ahpspec::host::FaultSet::new(faults)).for_sequences(None);
    let with = run(Routine::Config, &faulty, &cfg).await;
    assert!(with.failure.is_some(), "the profile's properties: judged");
    cfg.profile.session_config = None;
    cfg.profile.root_config = None;
    let without = run(Routine::Config, &faulty, &cfg).await;
    assert_eq!(without.failure, None, "no properties: nothing judged");
}

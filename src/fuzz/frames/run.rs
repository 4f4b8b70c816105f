//! Running one frames sequence: a victim connection gets each mutated frame (and a ping
//! right after it), a witness connection watches a session of its own and must go on being
//! served; at the end the witness's session is compared with a fresh snapshot.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{applied_from_batch, render, Answer, Mutation};
use crate::checks::Rule;
use crate::client::checkpoint;
use crate::client::{ping_request, Conn, Offer, DEFAULT_OFFER};
use crate::fuzz::exec::{
    in_setup, refused, until, ExecConfig, ExecError, Execution, Failure, Halt, Target,
};
use crate::fuzz::guidance::{Seen, ANY};
use crate::transport::{is_response_to, Connection, Incoming};

/// When a connection of a frames sequence is opened.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Opening {
    /// The sequence's first: refused, there is no server to fuzz.
    First,
    /// Later in the set-up.
    Setup,
    /// To replace a victim the host closed after this mutation.
    After(usize),
}

/// Opens and initializes a connection. A connection whose `initialize` failed goes to
/// `failed` (its frames are the finding's).
async fn open(
    url: &str,
    name: &str,
    client_id: &str,
    cfg: &ExecConfig,
    opening: Opening,
    failed: &mut Vec<Conn>,
) -> Result<Conn, Halt> {
    let mut conn = match (
        Conn::connect(url, cfg.timeout, name, client_id).await,
        opening,
    ) {
        (Ok(conn), _) => conn,
        (Err(error), Opening::After(index)) => {
            return Err(Halt::Finding(failure(
                Rule::Fuzz001,
                "the server accepts a new connection after it closed the last one".into(),
                format!("a new connection: {error}"),
                index,
            )))
        }
        (Err(error), _) => return Err(refused(opening == Opening::First, error)),
    };
    let after = match opening {
        Opening::After(index) => Some(index),
        _ => None,
    };
    match conn
        .initialize(&Offer::of([DEFAULT_OFFER]), cfg.timeout)
        .await
    {
        Ok(_) => Ok(conn),
        Err(error) => {
            failed.push(conn);
            Err(Halt::initialize(error, after))
        }
    }
}

/// The request id of mutated frame `index` is `FRAME_IDS + index`.
const FRAME_IDS: u64 = 7_000_000;

fn failure(rule: Rule, expected: String, actual: String, index: usize) -> Failure {
    Failure {
        rule,
        expected,
        actual,
        op_index: Some(index),
    }
}

/// Sends each mutated frame on one connection and checks both connections afterwards.
pub async fn execute_frames(
    mutations: &[Mutation],
    target: &Target,
    cfg: &ExecConfig,
) -> Result<Execution, ExecError> {
    execute_frames_until(mutations, target, cfg, None).await
}

/// [`execute_frames`], cut off at `deadline` (the execution then says so and has no verdict).
pub async fn execute_frames_until(
    mutations: &[Mutation],
    target: &Target,
    cfg: &ExecConfig,
    deadline: Option<Instant>,
) -> Result<Execution, ExecError> {
    let server = target.for_sequence().await.map_err(ExecError::Host)?;
    let token = crate::client::unique_token("ff");
    let mut execution = Execution::default();
    let mut conns: Vec<Conn> = Vec::new();
    let run = frames_run(
        mutations,
        &server.url,
        &token,
        cfg,
        &mut conns,
        &mut execution,
    );
    let (result, cut_off) = until(deadline, run).await;
    execution.cut_off = cut_off;
    for conn in &mut conns {
        conn.close().await;
    }
    // A server that outlives the sequence gets its sessions back (see `client::sweep`).
    if target.url().is_some() {
        let client_id = format!("ahpspec-{token}-sweep");
        let timeout = cfg.timeout.min(Duration::from_secs(1));
        crate::client::sweep_at(&server.url, &client_id, &token, &[], timeout).await;
    }
    // Mutated frames can be megabytes: keep the trace readable.
    execution.frames = conns
        .iter()
        .flat_map(Conn::reported_all)
        .map(|mut frame| {
            frame.text = crate::checks::frame::clip(&frame.text);
            frame
        })
        .collect();
    server.stop().await;
    Halt::settle(result, &mut execution, &cfg.exclude)?;
    // Violations of excluded rules are dropped where they are found; any other failure
    // of one ends the sequence without a verdict.
    execution.failure = cfg.exclude.judged(execution.failure.take());
    if execution.cut_off {
        execution.failure = None;
    }
    Ok(execution)
}

/// The victim (which gets the mutated frames) and the witness (which watches a session of
/// its own and must go on being served), set up; then the sequence.
async fn frames_run(
    mutations: &[Mutation],
    url: &str,
    token: &str,
    cfg: &ExecConfig,
    conns: &mut Vec<Conn>,
    execution: &mut Execution,
) -> Result<(), Halt> {
    let mut victim = open(
        url,
        "victim",
        &format!("ahpspec-{token}-victim"),
        cfg,
        Opening::First,
        conns,
    )
    .await?;
    let witness = open(
        url,
        "witness",
        &format!("ahpspec-{token}-witness"),
        cfg,
        Opening::Setup,
        conns,
    )
    .await;
    // The victim's mutated dispatches, echoed to the witness too, are the harness's words.
    let invalid = victim.invalid_dispatches().clone();
    let mut witness = match witness {
        Ok(witness) => witness.sharing(&invalid),
        Err(halt) => {
            conns.push(victim);
            return Err(halt);
        }
    };
    let session = format!("ahp-session:/{token}");
    let setup = watch_session(&mut witness, &session, cfg).await;
    let run = match setup {
        Ok(()) => {
            let pair = Pair {
                victim: &mut victim,
                witness: &mut witness,
            };
            let at = Sequence {
                url,
                token,
                session: &session,
                cfg,
            };
            run_mutations(mutations, &at, pair, conns, execution).await
        }
        Err(halt) => Err(halt),
    };
    if run.is_ok() && execution.failure.is_none() {
        execution.failure = after_sequence(&mut witness, session, url, token, cfg).await;
    }
    conns.extend([victim, witness]);
    run
}

/// The two connections of a frames sequence.
struct Pair<'a> {
    victim: &'a mut Conn,
    witness: &'a mut Conn,
}

/// Where a frames sequence runs.
struct Sequence<'a> {
    url: &'a str,
    token: &'a str,
    /// The witness's session (a batch frame renames it).
    session: &'a str,
    cfg: &'a ExecConfig,
}

/// The witness creates its session and subscribes to it for immediate delivery.
async fn watch_session(witness: &mut Conn, session: &str, cfg: &ExecConfig) -> Result<(), Halt> {
    let created = witness
        .create_session(json!({ "channel": session }), cfg.timeout)
        .await
        .map_err(|e| in_setup("createSession", e))?;
    if created.get("error").is_some() {
        return Err(ExecError::Setup(format!("createSession failed: {created}")).into());
    }
    witness
        .subscribe_immediate(session, cfg.timeout)
        .await
        .map_err(|e| in_setup("subscribe", e))?;
    Ok(())
}

/// Sends each mutation on the victim; stops at the first failure. A victim the host closed
/// goes to `conns` and a fresh one takes its place.
async fn run_mutations(
    mutations: &[Mutation],
    at: &Sequence<'_>,
    pair: Pair<'_>,
    conns: &mut Vec<Conn>,
    execution: &mut Execution,
) -> Result<(), Halt> {
    let Pair { victim, witness } = pair;
    let mut victims_closed = 0;
    for (index, mutation) in mutations.iter().enumerate() {
        execution.operations += 1;
        let (closed, failure) =
            one_mutation(mutation, index, at, (victim, witness), &mut execution.seen).await;
        if failure.is_some() {
            execution.failure = failure;
            return Ok(());
        }
        if closed {
            // The host may close on hostile input; go on with a fresh victim connection.
            victims_closed += 1;
            let name = format!("victim{victims_closed}");
            let client_id = format!("ahpspec-{}-{name}", at.token);
            let replacement = open(
                at.url,
                &name,
                &client_id,
                at.cfg,
                Opening::After(index),
                conns,
            )
            .await?
            .sharing(witness.invalid_dispatches());
            conns.push(std::mem::replace(victim, replacement));
        }
    }
    Ok(())
}

/// What the victim got back for one mutated frame and the ping sent right after it.
struct Probed {
    /// The answer to the mutated frame (a response with its id, or an id-null error where
    /// JSON-RPC allows one), if it came.
    answered: Option<Value>,
    pong: bool,
    closed: bool,
    /// Whether the wait for the answer ended at the pong because its rule is known to fail
    /// (or not judged): a missing answer then says nothing.
    cut_short: bool,
}

impl Probed {
    /// How the host answered, for the coverage map: `error <code>`, `answered`, `closed`
    /// or `unanswered`.
    fn response(&self) -> String {
        match &self.answered {
            Some(m) => match m.pointer("/error/code").and_then(Value::as_i64) {
                Some(code) => format!("error {code}"),
                None => "answered".to_owned(),
            },
            None if self.closed => "closed".to_owned(),
            None => "unanswered".to_owned(),
        }
    }
}

/// Sends one mutated frame and a ping, and reads until both are answered (each by its own
/// id, in whatever order the host answers them), the connection closes, or the timeout
/// passes. The answer to the frame is not waited for past the pong when its rule is
/// settled ([`ExecConfig::settled`]).
async fn send_and_probe(
    victim: &mut Conn,
    frame: Result<String, Vec<u8>>,
    answer: &Answer,
    probe: u64,
    cfg: &ExecConfig,
) -> Probed {
    let sent = match frame {
        Ok(text) => victim.send_raw(&text).await,
        Err(bytes) => victim.send_binary(bytes).await,
    };
    let awaited = match answer {
        Answer::Error { rule, .. } | Answer::Answered { rule, .. } => !cfg.settled(*rule),
        Answer::Survive => false,
    };
    let mut probed = Probed {
        answered: None,
        pong: false,
        closed: sent.is_err(),
        cut_short: false,
    };
    if !probed.closed {
        probed.closed = victim.send_json(&ping_request(probe)).await.is_err();
    }
    if probed.closed {
        return probed;
    }
    let deadline = Instant::now() + cfg.timeout;
    let wanted = !matches!(answer, Answer::Survive);
    // An id-null error answers whichever frame the host could not identify, in whatever
    // order it answers: one with a code this frame does not get may answer an earlier
    // frame, so it is this frame's answer only if no right one comes.
    let mut other = None;
    while !(probed.pong && (probed.answered.is_some() || !awaited)) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match victim.recv(left).await {
            Ok(Incoming::Message(m)) if is_response_to(&m, probe) => probed.pong = true,
            Ok(Incoming::Message(m)) if wanted && answer.is_answer(&m) => {
                if m["id"].is_null() && !answer.accepts(&m) {
                    other = Some(m);
                } else {
                    probed.answered = Some(m);
                }
            }
            Ok(Incoming::Closed { .. }) | Err(_) => break,
            Ok(_) => {}
        }
    }
    probed.answered = probed.answered.or(other);
    probed.cut_short = wanted && !awaited && probed.pong && probed.answered.is_none();
    probed.closed = victim.is_closed();
    probed
}

/// One mutated frame: sent, its answer judged, both connections' checks run, the witness
/// still served. Returns whether the victim was closed, and the first failure.
async fn one_mutation(
    mutation: &Mutation,
    index: usize,
    at: &Sequence<'_>,
    (victim, witness): (&mut Conn, &mut Conn),
    seen: &mut Vec<Seen>,
) -> (bool, Option<Failure>) {
    let cfg = at.cfg;
    let (frame, answer) = render(mutation, FRAME_IDS + index as u64, at.session);
    victim.next_frame_invalid();
    let probed = send_and_probe(victim, frame, &answer, 8_000_000 + index as u64, cfg).await;
    seen.push(Seen {
        channel: "connection",
        state: ANY,
        operation: mutation.kind(),
        response: probed.response(),
    });
    let closed = probed.closed;
    // A closed connection may be a server that died: that is the finding, not the answer
    // the close cut off.
    if closed {
        if let Some(failure) = others_served(witness, at, mutation, index).await {
            return (closed, Some(failure));
        }
    }
    if !probed.pong && !closed {
        let failure = failure(
            mutation.answering_rule(),
            format!("an answer to ping after {mutation:?} (or a close)"),
            format!(
                "nothing within {} ms: the connection stopped answering",
                cfg.timeout.as_millis()
            ),
            index,
        );
        return (closed, Some(failure));
    }
    if let Some(failure) = judge_answer(&answer, probed, mutation, index, cfg) {
        return (closed, Some(failure));
    }
    // Both connections' checks run (the later one's violation is the one reported).
    let mut judged = None;
    for conn in [&mut *victim, &mut *witness] {
        let found = conn.process(&cfg.schemas).into_iter();
        let found = found.map(|l| (l.conn, l.violation));
        judged = cfg.exclude.first_failure(found, Some(index)).or(judged);
    }
    if judged.is_some() {
        return (closed, judged);
    }
    (closed, others_served(witness, at, mutation, index).await)
}

/// FUZZ-001 when the witness is no longer served after `mutation`; whether the server
/// still takes connections says whether it died.
async fn others_served(
    witness: &mut Conn,
    at: &Sequence<'_>,
    mutation: &Mutation,
    index: usize,
) -> Option<Failure> {
    let timeout = at.cfg.timeout;
    let alive = witness.ping(timeout).await;
    // Any answer will do: a host that refuses ping (TRANSPORT-010's matter) still answers.
    let shown = match &alive {
        Ok(_) => return None,
        Err(error) => error.to_string(),
    };
    let actual = match Connection::connect(at.url, timeout).await {
        Ok(mut link) => {
            link.close().await;
            format!("its ping: {shown}")
        }
        Err(error) => format!(
            "its ping: {shown}; the server no longer accepts connections ({error}): it died"
        ),
    };
    Some(failure(
        Rule::Fuzz001,
        format!("the other connection still served after {mutation:?}"),
        actual,
        index,
    ))
}

/// The error (or close) a correct host gives for the mutated frame, when its rule is judged
/// and its answer was waited for.
fn judge_answer(
    answer: &Answer,
    probed: Probed,
    mutation: &Mutation,
    index: usize,
    cfg: &ExecConfig,
) -> Option<Failure> {
    let (codes, close_ok, rule): (&[i64], bool, &Rule) = match answer {
        Answer::Error {
            codes,
            close_ok,
            rule,
            ..
        } => (codes, *close_ok, rule),
        Answer::Answered { rule, .. } => (&[], true, rule),
        Answer::Survive => return None,
    };
    let ok = match &probed.answered {
        Some(response) => answer.accepts(response),
        None => probed.closed && close_ok,
    };
    if ok || probed.cut_short || !cfg.exclude.judges(rule) {
        return None;
    }
    let got = match probed.answered {
        Some(response) => crate::checks::frame::clip(&response.to_string()),
        None if probed.closed => "the connection closed".into(),
        None => format!("no response within {} ms", cfg.timeout.as_millis()),
    };
    let or_close = if close_ok { " (or a close)" } else { "" };
    let wanted = match answer {
        Answer::Answered { .. } => "a response".to_owned(),
        _ => format!("an error {codes:?}"),
    };
    Some(failure(
        *rule,
        format!("{wanted} for {mutation:?}{or_close}"),
        got,
        index,
    ))
}

/// After the last mutation: what the witness received checked, then its session's state
/// compared with a fresh observer's snapshot.
async fn after_sequence(
    witness: &mut Conn,
    session: String,
    url: &str,
    token: &str,
    cfg: &ExecConfig,
) -> Option<Failure> {
    witness
        .drain(cfg.settle.max(Duration::from_millis(5)))
        .await;
    let victim = format!("ahpspec-{token}-victim");
    let applied = applied_from_batch(witness.received_since(0), &session, &victim);
    if let Some((seq, envelope)) = applied.filter(|_| cfg.exclude.judges(Rule::Fuzz002)) {
        return Some(Failure {
            rule: Rule::Fuzz002,
            expected: "no change to the witness's session from frames the host refused".into(),
            actual: format!(
                "the rename inside a refused batch was applied: {}",
                crate::checks::frame::clip(&envelope.to_string())
            ),
            op_index: seq
                .checked_sub(FRAME_IDS)
                .and_then(|i| usize::try_from(i).ok()),
        });
    }
    let judged = witness
        .process(&cfg.schemas)
        .into_iter()
        .find(|l| cfg.exclude.judges(l.violation.rule));
    if let Some(located) = judged {
        return Some(Failure {
            rule: located.violation.rule,
            expected: located.violation.expected,
            actual: located.violation.actual,
            op_index: None,
        });
    }
    let client_id = format!("ahpspec-{token}-observer");
    let compared = checkpoint::compare_once(
        &mut [witness],
        vec![session],
        url,
        cfg.timeout,
        &client_id,
        DEFAULT_OFFER,
    )
    .await;
    match compared {
        Ok(checked) => cfg.exclude.first_failure(checked.violations, None),
        Err(error) => Some(Failure {
            rule: Rule::Fuzz002,
            expected: "state intact and observable after the malformed frames".into(),
            actual: error,
            op_index: None,
        }),
    }
}

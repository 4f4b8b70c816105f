//! Running one frames sequence: a victim connection gets each mutated frame (and a ping
//! right after it), a witness connection watches a session of its own and must go on being
//! served; at the end the witness's session is compared with a fresh snapshot.

use std::time::Duration;

use serde_json::{json, Value};

use super::{render, Answer, Mutation};
use crate::client::checkpoint;
use crate::client::{
    immediate_subscribe_params, initialize, initialize_params, Conn, DEFAULT_OFFER, ROOT,
};
use crate::fuzz::exec::{ExecConfig, ExecError, Execution, Failure, Target};
use crate::transport::{Connection, Incoming};

async fn open(url: &str, name: &str, client_id: &str, cfg: &ExecConfig) -> Result<Conn, ExecError> {
    let link = Connection::connect(url, cfg.timeout)
        .await
        .map_err(|e| ExecError::Setup(e.to_string()))?;
    let mut conn = Conn::new(name, client_id, link);
    let params = initialize_params([DEFAULT_OFFER], client_id);
    initialize(&mut conn.link, params, cfg.timeout)
        .await
        .map_err(ExecError::initialize)?;
    Ok(conn)
}

fn failure(rule: &str, expected: String, actual: String, index: usize) -> Failure {
    Failure {
        rule: rule.to_owned(),
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
    let (url, builtin) = target.start().await.map_err(ExecError::Host)?;
    let token = crate::client::unique_token("ff");
    let mut execution = Execution::default();
    let mut conns: Vec<Conn> = Vec::new();
    let result = frames_run(mutations, &url, &token, cfg, &mut conns, &mut execution).await;
    for conn in &mut conns {
        conn.link.close().await;
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
    if let Some(host) = builtin {
        host.shutdown().await;
    }
    result?;
    // Violations of excluded rules are dropped where they are found; any other failure
    // of one ends the sequence without a verdict.
    execution.failure = cfg.exclude.judged(execution.failure.take());
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
) -> Result<(), ExecError> {
    let mut victim = open(url, "victim", &format!("ahpspec-{token}-victim"), cfg).await?;
    let mut witness = open(url, "witness", &format!("ahpspec-{token}-witness"), cfg).await?;
    let session = format!("ahp-session:/{token}");
    let setup = watch_session(&mut witness, &session, cfg).await;
    let run = match setup {
        Ok(()) => {
            let pair = Pair {
                victim: &mut victim,
                witness: &mut witness,
            };
            run_mutations(mutations, url, token, cfg, pair, conns, execution).await
        }
        Err(error) => Err(error),
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

/// The witness creates its session and subscribes to it for immediate delivery.
async fn watch_session(
    witness: &mut Conn,
    session: &str,
    cfg: &ExecConfig,
) -> Result<(), ExecError> {
    let setup = |e: crate::transport::TransportError| ExecError::Setup(e.to_string());
    let created = witness
        .link
        .request("createSession", json!({ "channel": session }), cfg.timeout)
        .await
        .map_err(setup)?;
    if created.get("error").is_some() {
        return Err(ExecError::Setup(format!("createSession failed: {created}")));
    }
    witness
        .link
        .request(
            "subscribe",
            immediate_subscribe_params(session),
            cfg.timeout,
        )
        .await
        .map_err(setup)?;
    Ok(())
}

/// Sends each mutation on the victim; stops at the first failure. A victim the host closed
/// goes to `conns` and a fresh one takes its place.
async fn run_mutations(
    mutations: &[Mutation],
    url: &str,
    token: &str,
    cfg: &ExecConfig,
    pair: Pair<'_>,
    conns: &mut Vec<Conn>,
    execution: &mut Execution,
) -> Result<(), ExecError> {
    let Pair { victim, witness } = pair;
    let mut victims_closed = 0;
    for (index, mutation) in mutations.iter().enumerate() {
        execution.operations += 1;
        let (closed, failure) = one_mutation(mutation, index, cfg, victim, witness).await;
        if failure.is_some() {
            execution.failure = failure;
            return Ok(());
        }
        if closed {
            // The host may close on hostile input; go on with a fresh victim connection.
            victims_closed += 1;
            let name = format!("victim{victims_closed}");
            let replacement = open(url, &name, &format!("ahpspec-{token}-{name}"), cfg).await?;
            conns.push(std::mem::replace(victim, replacement));
        }
    }
    Ok(())
}

/// What the victim got back for one mutated frame and the ping sent right after it.
struct Probed {
    /// The last response (not the ping's) before the ping's answer.
    answered: Option<Value>,
    pong: bool,
    closed: bool,
}

/// Sends one mutated frame and a ping, and reads up to the ping's answer (or a close):
/// everything before it belongs to the mutated frame.
async fn send_and_probe(
    victim: &mut Conn,
    frame: Result<String, Vec<u8>>,
    probe: u64,
    cfg: &ExecConfig,
) -> Probed {
    let sent = match frame {
        Ok(text) => victim.link.send_raw(&text).await,
        Err(bytes) => victim.link.send_binary(bytes).await,
    };
    let mut probed = Probed {
        answered: None,
        pong: false,
        closed: sent.is_err(),
    };
    if !probed.closed {
        let ping = json!({ "jsonrpc": "2.0", "id": probe, "method": "ping", "params": { "channel": ROOT } });
        probed.closed = victim.link.send_json(&ping).await.is_err();
    }
    if probed.closed {
        return probed;
    }
    loop {
        match victim.link.recv(cfg.timeout).await {
            Ok(Incoming::Message(m)) if m.get("id") == Some(&json!(probe)) => {
                probed.pong = true;
                break;
            }
            Ok(Incoming::Message(m)) if m.get("method").is_none() => probed.answered = Some(m),
            Ok(Incoming::Closed { .. }) | Err(_) => break,
            Ok(_) => {}
        }
    }
    probed.closed = victim.link.is_closed();
    probed
}

/// One mutated frame: sent, its answer judged, both connections' checks run, the witness
/// still served. Returns whether the victim was closed, and the first failure.
async fn one_mutation(
    mutation: &Mutation,
    index: usize,
    cfg: &ExecConfig,
    victim: &mut Conn,
    witness: &mut Conn,
) -> (bool, Option<Failure>) {
    let (frame, answer) = render(mutation, 7_000_000 + index as u64);
    victim
        .checks
        .intended_invalid
        .push(victim.link.transcript().frames.len());
    let probed = send_and_probe(victim, frame, 8_000_000 + index as u64, cfg).await;
    let closed = probed.closed;
    if !probed.pong && !closed {
        let failure = failure(
            "TRANSPORT-006",
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
    let alive = witness
        .link
        .request("ping", json!({ "channel": ROOT }), cfg.timeout)
        .await;
    if !matches!(&alive, Ok(r) if r.get("result").is_some()) {
        let failure = failure(
            "FUZZ-001",
            format!("the other connection still served after {mutation:?}"),
            format!("{alive:?}"),
            index,
        );
        return (closed, Some(failure));
    }
    (closed, None)
}

/// The error (or close) a correct host gives for the mutated frame, when its rule is judged.
fn judge_answer(
    answer: &Answer,
    probed: Probed,
    mutation: &Mutation,
    index: usize,
    cfg: &ExecConfig,
) -> Option<Failure> {
    let Answer::Error {
        id: want,
        codes,
        close_ok,
        rule,
    } = answer
    else {
        return None;
    };
    let ok = match &probed.answered {
        Some(response) => {
            let code = response["error"]["code"].as_i64();
            (response.get("id") == Some(want) || want.is_null())
                && code.is_some_and(|c| codes.is_empty() || codes.contains(&c))
        }
        None => probed.closed && *close_ok,
    };
    if ok || !cfg.exclude.judges(rule) {
        return None;
    }
    let got = match probed.answered {
        Some(response) => crate::checks::frame::clip(&response.to_string()),
        None if probed.closed => "the connection closed".into(),
        None => "no response".into(),
    };
    let or_close = if *close_ok { " (or a close)" } else { "" };
    Some(failure(
        rule,
        format!("an error {codes:?} for {mutation:?}{or_close}"),
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
        .link
        .drain(cfg.settle.max(Duration::from_millis(5)))
        .await;
    let judged = witness
        .process(&cfg.schemas)
        .into_iter()
        .find(|l| cfg.exclude.judges(l.violation.rule.id()));
    if let Some(located) = judged {
        return Some(Failure {
            rule: located.violation.rule.id().to_owned(),
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
            rule: "FUZZ-002".into(),
            expected: "state intact and observable after the malformed frames".into(),
            actual: error,
            op_index: None,
        }),
    }
}

//! The oracles of the cargo-fuzz targets (`fuzz/`, FUZZING.md) in ordinary `cargo test`: a
//! short smoke run of each on generated inputs, the recorded material they are seeded from,
//! and every input a fuzz campaign found (regressions).

use ahpspec::fuzz::shaped::{hostile_value, shaped_message, AnyJson, Limits};
use ahpspec::selfcheck::{
    embedded_schemas, loader_survives, stream_checks_survive, tape_matches_serde,
    tape_schema_matches_value, Loader,
};
use arbitrary::{Arbitrary, Unstructured};

/// Deterministic entropy: `n` bytes of a xorshift stream from `seed`.
fn entropy(seed: u64, n: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[test]
fn generated_json_parses_on_the_tape_as_with_serde_json() {
    for seed in 0..400 {
        let bytes = entropy(seed, 2048);
        let Ok(AnyJson(value)) = AnyJson::arbitrary(&mut Unstructured::new(&bytes)) else {
            continue;
        };
        let text = value.to_string();
        assert_eq!(tape_matches_serde(&text), Ok(()), "{text}");
        // Cut short, the same text is (nearly always) not JSON: both must say so.
        let cut = (0..=text.len() / 2)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        assert_eq!(tape_matches_serde(&text[..cut]), Ok(()), "{}", &text[..cut]);
    }
}

#[test]
fn schemas_judge_generated_instances_alike_on_tape_and_value() {
    let schemas = embedded_schemas();
    let defs: Vec<&str> = schemas.set.def_names().collect();
    for seed in 0..200 {
        let bytes = entropy(seed, 1024);
        let mut u = Unstructured::new(&bytes);
        let message = shaped_message(&mut u, 1, Limits::SMALL).expect("enough entropy");
        let method = message["method"].as_str().unwrap_or_default();
        let def = &schemas.map.params[method];
        let text = message["params"].to_string();
        assert_eq!(tape_schema_matches_value(def, &text), Ok(()), "{text}");
        let def = defs[seed as usize * 7 % defs.len()];
        let value = hostile_value(&mut u, Limits::SMALL, 0).expect("enough entropy");
        let text = value.to_string();
        assert_eq!(
            tape_schema_matches_value(def, &text),
            Ok(()),
            "{def}: {text}"
        );
    }
}

/// Recorded frames, then the same frames shuffled, cut and doubled: the checks judge them
/// and never panic.
#[test]
fn stream_checks_take_recorded_and_broken_sequences() {
    let vectors = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("upstream/ahp/0.8.0-dev/test-cases/round-trips");
    let mut frames = Vec::new();
    for entry in std::fs::read_dir(&vectors)
        .expect("vectors in upstream/ahp/")
        .flatten()
    {
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) {
                frames.push(value.to_string());
            }
        }
    }
    for seed in 0..100u64 {
        let bytes = entropy(seed, 64);
        let mut lines = Vec::new();
        for (i, b) in bytes.iter().enumerate() {
            let line = match b % 4 {
                0 if !frames.is_empty() => frames[usize::from(*b) % frames.len()].clone(),
                1 => format!(
                    ">{}",
                    shaped_message(
                        &mut Unstructured::new(&entropy(seed + i as u64, 256)),
                        i as u64,
                        Limits::SMALL
                    )
                    .unwrap_or_default()
                ),
                2 => r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1.0.0"}}"#.into(),
                _ => format!("<binary {b} bytes>"),
            };
            lines.push(line);
        }
        // The property is that this returns (no panic); broken input breaks rules.
        let violations = stream_checks_survive(&lines.join("\n"));
        assert!(
            violations > 0,
            "seed {seed}: nothing found in broken frames"
        );
    }
    assert!(frames.len() > 10, "only {} recorded frames", frames.len());
}

#[test]
fn loaders_take_the_shipped_files_and_garbage() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (loader, dir) in [(Loader::Suite, "suites"), (Loader::Profile, "profiles")] {
        for entry in std::fs::read_dir(root.join(dir))
            .expect("shipped files")
            .flatten()
            // suites/aap/ holds the AAP catalog, which these loaders do not read.
            .filter(|entry| entry.path().is_file())
        {
            let text = std::fs::read_to_string(entry.path()).expect("readable");
            assert_eq!(
                loader_survives(loader, &text),
                Ok(()),
                "{}",
                entry.path().display()
            );
            // Every prefix of the file too: half-written files are common.
            for cut in (0..text.len())
                .step_by(97)
                .filter(|&i| text.is_char_boundary(i))
            {
                assert_eq!(loader_survives(loader, &text[..cut]), Ok(()));
            }
        }
    }
    for seed in 0..200 {
        let bytes = entropy(seed, 512);
        let text = String::from_utf8_lossy(&bytes);
        for loader in Loader::ALL {
            assert_eq!(
                loader_survives(loader, &text),
                Ok(()),
                "{loader:?}: {text:?}"
            );
        }
    }
}

/// A trace's regression case (`replay --to-case`) loads once appended under a suite's
/// `page`, also when the failure text holds quotes, newlines and TOML syntax. (The first
/// loaders campaign stopped on the oracle itself, which judged the case without a page.)
#[test]
fn a_loaded_trace_becomes_a_case_that_loads() {
    for actual in [
        "it removed \"q1\" (on c1)",
        "a\nb ]] [[case]] \\u0000",
        "'''",
        // Found by the loaders campaign of session 7: DEL in a message and control
        // characters in the failure text.
        "removed \u{7f}q1\r\u{0}",
    ] {
        let trace = serde_json::json!({
            "format": 1, "toolVersion": "0.1.0", "seed": 1, "target": "builtin",
            "fault": "queue-lifo", "mode": "model",
            "failure": { "rule": "PENDING-003", "expected": "q0 first", "actual": actual, "opIndex": 1 },
            "originalLen": 2, "shrinkSteps": 0,
            "ops": [{ "op": "startTurn", "client": 0, "behaviour": "long" }],
            "performed": [], "frames": []
        });
        let text = trace.to_string();
        assert!(
            serde_json::from_str::<ahpspec::fuzz::trace::Trace>(&text).is_ok(),
            "the trace loads"
        );
        assert_eq!(loader_survives(Loader::Trace, &text), Ok(()), "{actual:?}");
    }
}

/// The first finding of the loaders campaign (session 7): a dispatched message holding DEL
/// (U+007F) went into the regression case as is, which TOML refuses in a string.
#[test]
fn a_trace_whose_message_holds_del_becomes_a_case_that_loads() {
    let planned = |op: u64, id: &str, text: &str| {
        serde_json::json!({
            "opIndex": op, "client": 0,
            "planned": {
                "channel": "chat",
                "action": {
                    "type": "chat/pendingMessageSet", "kind": "queued", "id": id,
                    "message": { "text": text, "origin": { "kind": "user" } }
                },
                "expect": "accept", "rule": "DISPATCH-008"
            }
        })
    };
    let trace = serde_json::json!({
        "format": 1, "toolVersion": "0.1.0", "seed": 1, "target": "builtin",
        "fault": "queue-lifo", "mode": "model",
        "failure": { "rule": "PENDING-003", "expected": "q0 first", "actual": "q1", "opIndex": 1 },
        "originalLen": 2, "shrinkSteps": 0,
        "ops": [
            { "op": "setPending", "client": 0, "kind": "queued", "id": 0 },
            { "op": "setPending", "client": 0, "kind": "queued", "id": 1 }
        ],
        "performed": [planned(0, "q0", "plain"), planned(1, "q1", "ahpspec-script:\u{7f}{}")],
        "frames": []
    });
    let text = trace.to_string();
    let loaded =
        serde_json::from_str::<ahpspec::fuzz::trace::Trace>(&text).expect("the trace loads");
    assert!(loaded.to_case().contains("\\u007F"), "{}", loaded.to_case());
    assert_eq!(loader_survives(Loader::Trace, &text), Ok(()));
}

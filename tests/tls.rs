//! wss://: the harness certifies a server behind TLS when told to trust its certificate
//! (`--ca-cert`), and refuses one it cannot verify. The server is the built-in host behind a
//! real TLS terminator on loopback, with a certificate made for the test.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use ahpspec::host::{self, HostConfig};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// A TLS front for the server at `backend` (host:port): every TLS connection it accepts is
/// forwarded, decrypted, to a fresh TCP connection to the backend. Returns the front's port
/// and the PEM of its self-signed certificate (for `localhost` and 127.0.0.1).
async fn tls_front(backend: String) -> (u16, String, tokio::task::JoinHandle<()>) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("certificate");
    let pem = made.cert.pem();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(vec![made.cert.der().clone()], key)
            .expect("server certificate");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds loopback");
    let port = listener.local_addr().expect("local address").port();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, backend) = (acceptor.clone(), backend.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(&backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    (port, pem, task)
}

/// A scratch directory under the system temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(label: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("ahpspec-tls-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("scratch dir");
        Scratch(path)
    }

    fn join(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `ahpspec` off the runtime's threads, so the host and the TLS front keep serving.
async fn ahpspec(args: Vec<String>) -> Output {
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_ahpspec"))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .expect("ahpspec runs")
    })
    .await
    .expect("ahpspec finishes")
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wss_server_is_certified_when_its_certificate_is_trusted_and_refused_otherwise() {
    let host = host::spawn(HostConfig::default())
        .await
        .expect("host starts");
    let backend = host
        .url()
        .strip_prefix("ws://")
        .expect("a ws:// URL")
        .trim_end_matches('/')
        .to_owned();
    let (port, pem, front) = tls_front(backend).await;
    let scratch = Scratch::new("certify");
    let cert = scratch.join("server.pem");
    std::fs::write(&cert, &pem).expect("writes the certificate");
    let url = format!("wss://localhost:{port}");
    let reports = scratch.join("reports");

    let trusted = ahpspec(
        [
            "run",
            &url,
            "--ca-cert",
            &cert,
            "--filter",
            "TRANSPORT-*,INIT-*,SUB-*",
            "--report-dir",
            &reports,
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{reports}/report.json")).expect("report.json"),
    )
    .expect("report parses");
    let cases = report["cases"].as_array().expect("cases");
    let passed = cases.iter().filter(|c| c["verdict"] == "pass").count();
    assert!(
        passed >= 5 && cases.iter().all(|c| c["verdict"] != "fail"),
        "cases over wss://: {}",
        show(&trusted)
    );

    // Without the certificate the handshake fails verification: no verdict about the
    // server, a one-line connection error, exit 2.
    let untrusted = ahpspec(
        [
            "run",
            &url,
            "--filter",
            "TRANSPORT-*",
            "--report-dir",
            &reports,
        ]
        .map(str::to_owned)
        .to_vec(),
    )
    .await;
    assert_eq!(untrusted.status.code(), Some(2), "{}", show(&untrusted));
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        stderr.contains("cannot connect") && stderr.to_lowercase().contains("certificate"),
        "{}",
        show(&untrusted)
    );

    front.abort();
    host.shutdown().await;
}

#[tokio::test]
async fn an_unusable_ca_file_is_a_one_line_usage_error() {
    let scratch = Scratch::new("bad-ca");
    let not_pem = scratch.join("not.pem");
    std::fs::write(&not_pem, "this is not a certificate\n").expect("writes");
    let missing = scratch.join("missing.pem");
    for (file, culprit) in [(&not_pem, "not.pem"), (&missing, "missing.pem")] {
        let out = ahpspec(
            ["run", "wss://localhost:1", "--ca-cert", file]
                .map(str::to_owned)
                .to_vec(),
        )
        .await;
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{}", show(&out));
        assert!(stderr.contains(culprit), "{}", show(&out));
    }
}

/// https:// (AAP): the same TLS set-up certifies the built-in AAP server behind the front,
/// and refuses it without the certificate (issue 17).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_aap_server_is_certified_when_its_certificate_is_trusted() {
    let server = ahpspec::aaphost::spawn(ahpspec::aaphost::AapHostConfig::default())
        .await
        .expect("AAP server starts");
    let (port, pem, front) = tls_front(server.local_addr().to_string()).await;
    let scratch = Scratch::new("aap");
    let cert = scratch.join("server.pem");
    std::fs::write(&cert, &pem).expect("writes the certificate");
    let url = format!("https://localhost:{port}");
    let reports = scratch.join("reports");
    let args = |extra: &[&str]| {
        let mut args = vec![
            "run",
            &url,
            "--filter",
            "AAP-SESSION-*,AAP-SSE-*",
            "--report-dir",
            &reports,
        ];
        args.extend_from_slice(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let trusted = ahpspec(args(&["--ca-cert", &cert])).await;
    assert_eq!(trusted.status.code(), Some(0), "{}", show(&trusted));
    let untrusted = ahpspec(args(&[])).await;
    assert_eq!(untrusted.status.code(), Some(2), "{}", show(&untrusted));
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert!(
        stderr.to_lowercase().contains("certificate"),
        "{}",
        show(&untrusted)
    );
    front.abort();
    server.shutdown().await;
}

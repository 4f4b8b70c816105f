//! The catalog as trials of `cargo test`, exactly as a server author embeds it (README,
//! "In your own cargo test"): here against the built-in host, started in-process.
//! `cargo test --test embedded -- --list` lists the case IDs; `-- TOOL-` runs the tool cases.

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let options = ahpspec::certify::Options {
        url: None, // your server: Some("ws://127.0.0.1:8080".into())
        ..Default::default()
    };
    let trials = match ahpspec::embed::trials(options, &args) {
        Ok(trials) => trials,
        Err(error) => {
            eprintln!("ahpspec: {error}");
            return std::process::ExitCode::from(2);
        }
    };
    libtest_mimic::run(&args, trials).exit_code()
}

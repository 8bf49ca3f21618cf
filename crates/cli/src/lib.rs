//! The `dpaudit` command line: the arguments of every command ([`args`]),
//! the commands that need no libtorch ([`cmd`]: `account`, `calibrate`,
//! `estimate`, `counts`, `compare`, `data`, `merge`, `slurm`), and the hand-over of the others to the
//! companion binary `dpaudit-torch` ([`companion`]; its code is the crate
//! `dpaudit-cli-torch`). This crate never links libtorch, so the pure
//! commands start in milliseconds; see `docs/cli.md`.

pub mod args;
pub mod cmd;
pub mod companion;

pub use args::{run_pure, Cli, Command, Outcome};

/// Output to a closed pipe (`dpaudit … | head -1`) ends the program quietly
/// with status 0. The standard library ignores SIGPIPE, so a write to a
/// closed pipe fails with `BrokenPipe`, and `println!` panics on that; this
/// hook turns exactly that panic into a quiet exit and leaves every other
/// panic to the default hook.
pub fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        // std's message: "failed printing to stdout: Broken pipe (os error 32)".
        if message.starts_with("failed printing to stdout")
            && message.to_ascii_lowercase().contains("broken pipe")
        {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Errors are printed as their message and causes, without a stack trace
/// (an error is a message for the user, not a crash; `RUST_BACKTRACE` is
/// for panics), and exit with status 1.
pub fn exit_on_error(result: anyhow::Result<()>) {
    if let Err(e) = result {
        eprintln!("Error: {e}");
        let mut causes = e.chain().skip(1).peekable();
        if causes.peek().is_some() {
            eprintln!("\nCaused by:");
            for (i, c) in causes.enumerate() {
                eprintln!("    {i}: {c}");
            }
        }
        std::process::exit(1);
    }
}

//! The `cint` binary: see the library for the commands and exit statuses.

use cint::{run, Engines};

fn main() {
    // Engine panics are caught and reported as one line by the library;
    // the default hook would print a multi-line message first.
    std::panic::set_hook(Box::new(|_| {}));
    let engines = Engines::real();
    // stderr is passed unlocked: each write takes the lock for itself.
    // Holding it for the whole run would block any other thread that
    // writes to stderr (a progress bar, an engine's warning) until the
    // run ends, which it then never does.
    let status = run(
        std::env::args_os(),
        &engines,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr(),
    );
    std::process::exit(status);
}

//! PLACEHOLDER: being written. The public entry point is fixed:
use cint_report::RunResult;
use cint_scenario::Scenario;

/// Why an emulation could not run.
#[derive(Debug)]
pub struct EmuError(pub String);

impl std::fmt::Display for EmuError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EmuError {}

/// Runs every strategy of the scenario on the emulator.
pub fn run(scenario: &Scenario) -> Result<RunResult, EmuError> {
    todo!("{}", scenario.name)
}

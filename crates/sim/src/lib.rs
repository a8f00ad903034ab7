//! PLACEHOLDER: being written. The public entry point is fixed:
use cint_report::RunResult;
use cint_scenario::Scenario;

/// Why a simulation could not run.
#[derive(Debug)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

/// Runs every strategy of the scenario on the simulator.
pub fn run(scenario: &Scenario) -> Result<RunResult, SimError> {
    todo!("{}", scenario.name)
}

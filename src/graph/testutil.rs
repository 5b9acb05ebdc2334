//! Test fixtures shared by the graph tests.

use super::GraphTask;

/// A stand-in manifest: a file name and whether it is a `batch/v1` Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fake {
    pub name: String,
    pub job: bool,
}

impl GraphTask for Fake {
    fn file_name(&self) -> &str {
        &self.name
    }
    fn is_job(&self) -> bool {
        self.job
    }
}

/// A non-Job task.
pub fn pod(name: &str) -> Fake {
    Fake {
        name: name.to_string(),
        job: false,
    }
}

/// A Job task.
pub fn job(name: &str) -> Fake {
    Fake {
        name: name.to_string(),
        job: true,
    }
}

/// Non-Job tasks with the given names.
pub fn pods(names: &[&str]) -> Vec<Fake> {
    names.iter().map(|n| pod(n)).collect()
}

/// Shorthand for a node literal in expected graphs.
pub fn node(tasks: &[usize], inputs: &[usize], outputs: &[usize]) -> super::TaskNode {
    super::TaskNode {
        tasks: tasks.to_vec(),
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }
}

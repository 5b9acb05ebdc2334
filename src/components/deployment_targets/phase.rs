//! Reading and setting the phases of targets and claims (each setter says whether it changed
//! the phase: upstream writes a phase only when it differs).

use super::types::{
    ClaimPhase, DeploymentTarget, DeploymentTargetClaim, DeploymentTargetClaimStatus,
    DeploymentTargetStatus, TargetPhase,
};

impl DeploymentTarget {
    /// `status.phase`; `None` is `""`.
    pub fn phase(&self) -> Option<TargetPhase> {
        self.status.as_ref().and_then(|s| s.phase.clone())
    }

    /// Sets `status.phase`; true when it changed.
    pub fn set_phase(&mut self, phase: TargetPhase) -> bool {
        let status = self
            .status
            .get_or_insert_with(DeploymentTargetStatus::default);
        let changed = status.phase.as_ref() != Some(&phase);
        status.phase = Some(phase);
        changed
    }
}

impl DeploymentTargetClaim {
    /// `status.phase`; `None` is `""`.
    pub fn phase(&self) -> Option<ClaimPhase> {
        self.status.as_ref().and_then(|s| s.phase)
    }

    /// Sets `status.phase`; true when it changed.
    pub fn set_phase(&mut self, phase: ClaimPhase) -> bool {
        let status = (self.status).get_or_insert_with(DeploymentTargetClaimStatus::default);
        let changed = status.phase != Some(phase);
        status.phase = Some(phase);
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_a_phase_reports_a_change_once() {
        let mut dt = DeploymentTarget::new("t", Default::default());
        assert_eq!(dt.phase(), None);
        assert!(dt.set_phase(TargetPhase::Bound));
        assert!(!dt.set_phase(TargetPhase::Bound));
        assert_eq!(dt.phase(), Some(TargetPhase::Bound));
        let mut claim = DeploymentTargetClaim::new("c", Default::default());
        assert!(claim.set_phase(ClaimPhase::Pending));
        assert!(!claim.set_phase(ClaimPhase::Pending));
        assert!(claim.set_phase(ClaimPhase::Lost));
        assert_eq!(claim.phase(), Some(ClaimPhase::Lost));
    }
}

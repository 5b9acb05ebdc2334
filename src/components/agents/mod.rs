//! Agent late binding (Assisted Installer, `agent-install.openshift.io`): hosts that boot an
//! InfraEnv's discovery image register as Agents into a free pool; cluster creators bind them
//! to a ClusterDeployment, unbind them, or move them (spec part C, design seed 002).
//!
//! Pure core (this increment; the controller shell, its webhook server and the discovery-agent
//! simulator come later):
//! - [`state`]: the host state machine (register, refresh, bind, unbind, reclaim).

pub mod state;

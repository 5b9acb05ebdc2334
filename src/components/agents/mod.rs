//! Agent late binding (Assisted Installer, `agent-install.openshift.io`): hosts that boot an
//! InfraEnv's discovery image register as Agents into a free pool; cluster creators bind them
//! to a ClusterDeployment, unbind them, or move them (spec part C, design seed 002).
//!
//! Pure core:
//! - [`types`]: the CRD types (Agent, InfraEnv, and the minimal ClusterDeployment and
//!   AgentClusterInstall binding reads); [`keys`]: finalizers, labels, annotations; [`crds`]:
//!   the CRDs the payload ships, the capability and the component's name.
//! - [`state`]: the host state machine (register, refresh, bind, unbind, reclaim).
//! - [`validation`]: the validations, and which of them an unbound host runs.
//! - [`binding`]: the Agent reconcile's decision, BindHost/UnbindHost refusals, teardown on
//!   ClusterDeployment deletion.
//! - [`conditions`]: the Agent conditions a host state maps to.
//! - [`reconcile`]: one Agent reconcile as a pure step (refresh, bind/unbind, conditions,
//!   Events and their scope), registration and next steps, teardown, the InfraEnv status.
//! - [`webhook`]: the Agent and InfraEnv admission rules (`cvo agent admit`).
//! - [`discovery`]: the simulated discovery agent's inventory.
//! - [`hub`]: whether the component runs, or stands down where another operator
//!   (assisted-service) serves `agent-install.openshift.io`.
//!
//! Shell (I/O): [`controller`] (`cvo controller agents`: watch caches, the Agent, ClusterDeployment
//! and InfraEnv controllers, Events, the ClusterOperator) and [`admission`] (the webhooks'
//! AdmissionReview exchange), and [`simulator`] (`cvo agent simulate`).

pub mod admission;
pub mod binding;
pub mod conditions;
pub mod controller;
pub mod crds;
pub mod discovery;
pub mod hub;
pub mod keys;
pub mod reconcile;
pub mod simulator;
pub mod state;
pub mod types;
pub mod validation;
pub mod webhook;

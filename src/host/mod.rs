//! What every long-running `cvo` process shares, whether it applies the payload (`cvo start`)
//! or runs a payload component's controllers (`cvo controller NAME`):
//!
//! * [`lease`]: leader election on a `coordination.k8s.io/v1` Lease;
//! * [`serve`]: `/metrics`, `/healthz` and `/readyz`;
//! * [`signal`]: stopping on SIGTERM;
//! * [`webhook`]: admission webhooks over TLS, with a certificate the controller makes;
//! * [`controller`]: the host of components' controllers (leadership, metrics, Events);
//! * [`operator_status`] (pure) and [`cluster_operator`]: the ClusterOperator a component keeps.

pub mod cluster_operator;
pub mod controller;
pub mod lease;
pub mod operator_status;
pub mod serve;
pub mod signal;
pub mod webhook;

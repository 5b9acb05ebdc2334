//! What every long-running `cvo` process shares, whether it applies the payload (`cvo start`)
//! or runs a payload component's controllers (`cvo controller NAME`):
//!
//! * [`lease`]: leader election on a `coordination.k8s.io/v1` Lease;
//! * [`serve`]: `/metrics`, `/healthz` and `/readyz`; [`metrics_tls`] serves them over TLS
//!   for `cvo start`, `/metrics` for the monitoring stack only ([`metrics_auth`], pure), with
//!   the TLS settings of [`tls_settings`] (pure) over the cluster's profile of [`tls_profile`]
//!   (pure);
//! * [`signal`]: stopping on SIGTERM;
//! * [`webhook`]: admission webhooks over TLS, with a certificate the controller makes;
//! * [`controller`]: the host of components' controllers (leadership, metrics, Events), with
//!   [`backoff`] (pure): how long a failed reconcile waits, as controller-runtime's do;
//! * [`operator_status`] (pure) and [`cluster_operator`]: the ClusterOperator a component keeps.

pub mod backoff;
pub mod cluster_operator;
pub mod controller;
pub mod lease;
pub mod metrics_auth;
pub mod metrics_tls;
pub mod operator_status;
pub mod serve;
pub mod signal;
pub mod tls_profile;
pub mod tls_settings;
pub mod webhook;

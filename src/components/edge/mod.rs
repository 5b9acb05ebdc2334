//! Open Horizon edge: the policy language the agent, the agbot and the exchange share, so that
//! `cvo` decides placement and node management the way Open Horizon does (spec B.3, issue 11).
//!
//! Pure core:
//! - [`agent_install`]: the edge cluster agent's objects, its RBAC per scope and the
//!   coexistence rules of the install script.
//! - [`cluster_properties`]: the built-in node properties a cluster agent computes from the
//!   Nodes it lists.
//! - [`version`]: versions and version ranges (anax `semanticversion`).
//! - [`properties`]: exchange properties `{name, value, type}` and their validation.
//! - [`placement`]: where a service lands: the built-in namespace properties, the target
//!   namespace, the agent-side install rule.
//! - [`exchange`]: exchange documents in the exchange's JSON; [`fields`]: their field names,
//!   for the near-miss checks; [`operator_archive`]: the namespace a service's operator declares.
//! - [`deploy`]: what an agent applies to install an operator YAML (the final namespace, the
//!   refusal, the Namespace and NetworkPolicy, normalised subjects).
//! - [`deploycheck`]: deploycheck's per-service checks and warnings.
//! - [`package`]: agent packages (seed 001): the manifest, the layout, the digest; read and
//!   written by the shell [`package_file`].
//! - [`nmp`]: node management policies: schema, validation, the seed's form translated.
//! - [`nmp_status`]: a node's status for a policy, in the exchange's JSON; the status strings.
//! - [`agent_files`]: agent file versions, upgrade manifests, version resolution, package names.
//! - [`nmp_worker`]: the per-node node management worker, a deterministic state machine.
//! - [`nmp_plan`]: the fleet view: per NMP the nodes, their start times and end versions.
//! - [`constraints`]: the constraint language (lexer, validation, evaluation) and the
//!   bidirectional compatibility of two policies.

pub mod agent_files;
pub mod agent_install;
pub mod cluster_properties;
pub mod constraints;
pub mod deploy;
pub mod deploycheck;
pub mod exchange;
pub mod fields;
pub mod nmp;
pub mod nmp_plan;
pub mod nmp_status;
pub mod nmp_worker;
pub mod operator_archive;
pub mod package;
pub mod package_file;
pub mod placement;
pub mod properties;
pub mod version;

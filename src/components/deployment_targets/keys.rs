//! Annotation, label and finalizer keys, and the values written under them, exactly as the
//! running system writes them (spec A.3); where ADR 8 says otherwise, docs/components/deployment-targets.md lists it.

/// On a claim the binder marked for dynamic provisioning; value: the claim's class name
/// (not a provisioner name, whatever ADR 8 says).
pub const ANN_TARGET_PROVISIONER: &str = "provisioner.appstudio.redhat.com/dt-provisioner";
/// On a claim whose binding the binder completed.
pub const ANN_BIND_COMPLETED: &str = "dt.appstudio.redhat.com/bind-complete";
/// On a claim whose target the binder chose (rather than the user through `targetName`).
pub const ANN_BOUND_BY_CONTROLLER: &str = "dt.appstudio.redhat.com/bound-by-controller";
/// The value of the two binder annotations above (ADR 8: `"yes"`).
pub const ANN_BINDER_VALUE_TRUE: &str = "true";
/// On a DeploymentTarget a provisioner made; value: the provisioner's name.
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "provisioner.appstudio.redhat.com/provisioned-by";

/// The binder's finalizer on every claim.
pub const FINALIZER_BINDER: &str = "binder.appstudio.redhat.com/finalizer";
/// The reclaimer's finalizer on every DeploymentTarget.
pub const FINALIZER_DT: &str = "dt.appstudio.redhat.com/finalizer";
/// codeready-toolchain's finalizer, added to a SpaceRequest whose target is being deleted.
pub const FINALIZER_SPACE_REQUEST: &str = "finalizer.toolchain.dev.openshift.com";

/// On a SpaceRequest (and a provisioned namespace): the claim it was made for.
pub const LABEL_CLAIM: &str = "appstudio.openshift.io/dtc";
/// On a SpaceRequest: the DeploymentTarget made from it.
pub const LABEL_TARGET: &str = "appstudio.openshift.io/dt";
/// On a provisioned DeploymentTarget, copied from the claim's `dt-provisioner` annotation.
pub const LABEL_TARGET_PROVISIONER: &str = ANN_TARGET_PROVISIONER;
/// On the Secret the Environment controller copies; value: the Environment's name.
pub const LABEL_ENVIRONMENT_SECRET: &str = "appstudio.openshift.io/environment-secret";

/// On a kubeconfig Secret the namespace provisioner wrote: when its token was issued and when
/// it expires (RFC 3339, the expiry as the API server gave it, which may be sooner than the
/// class asked for). The token is renewed once 80% of that lifetime has passed.
pub const ANN_TOKEN_ISSUED_AT: &str = "provisioner.appstudio.redhat.com/token-issued-at";
pub const ANN_TOKEN_EXPIRES_AT: &str = "provisioner.appstudio.redhat.com/token-expires-at";

/// The devsandbox provisioner (SpaceRequests of codeready-toolchain).
pub const PROVISIONER_DEVSANDBOX: &str = "appstudio.redhat.com/devsandbox";
/// `cvo`'s own provisioner: a namespace on this cluster with an admin ServiceAccount.
pub const PROVISIONER_NAMESPACE: &str = "appstudio.redhat.com/namespace";
/// The tier of the SpaceRequests the devsandbox provisioner creates.
pub const SPACE_REQUEST_TIER: &str = "appstudio-env";
/// toolchain's Ready reason when a space cannot be terminated.
pub const SPACE_TERMINATING_FAILED_REASON: &str = "UnableToTerminate";

/// The Secret type of a managed environment's credentials.
pub const MANAGED_ENVIRONMENT_SECRET_TYPE: &str = "managed-gitops.redhat.com/managed-environment";
/// `managed-environment-<env>`: the managed environment made for an Environment.
pub const MANAGED_ENVIRONMENT_PREFIX: &str = "managed-environment-";
/// `managed-environment-secret-<env>`: the credentials copied for it.
pub const MANAGED_ENVIRONMENT_SECRET_PREFIX: &str = "managed-environment-secret-";

/// The only condition type on targets and claims.
pub const CONDITION_ERROR_OCCURRED: &str = "ErrorOccurred";
/// Reason of `ErrorOccurred=True`.
pub const REASON_ERROR_OCCURRED: &str = "ErrorOccurred";
/// Reason of `ErrorOccurred=False`.
pub const REASON_SUCCESS: &str = "Success";
/// The Environment's condition besides the legacy `ErrorOccurred`.
pub const CONDITION_RECONCILED: &str = "Reconciled";

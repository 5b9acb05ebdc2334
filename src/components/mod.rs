//! Payload components that `cvo` ships in its own payloads (`payloads/`) and implements:
//! DeploymentTarget provisioning (Konflux), agent late binding (Assisted Installer) and the
//! Open Horizon edge agent. Each will be a state machine over plain data here, with its
//! cluster shell beside the operator. None is built yet; later issues add them.

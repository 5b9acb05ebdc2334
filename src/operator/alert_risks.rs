//! The `Alert` risk source's shell (upstream `pkg/risk/alert` with its alert getter): the
//! firing alerts read from Prometheus before the status is computed, kept when reading fails.
//! What an alert makes of a risk is [`crate::updates::alerts`]'s.

use crate::updates::AvailableUpdates;
use crate::updates::alerts::alert_risks;
use crate::updates::prometheus::{self, PrometheusOptions};

/// Reads the alerts into `updates.alerts`; on failure (or without a Prometheus) the risks read
/// last stay, as upstream's getter keeps its stale cache.
pub async fn refresh(updates: &mut AvailableUpdates, options: &PrometheusOptions) {
    if options.url.is_none() {
        return;
    }
    match prometheus::alerts(options).await {
        Ok(alerts) => {
            let risks = alert_risks(&alerts);
            if risks != updates.alerts {
                tracing::info!(
                    alerts = alerts.len(),
                    risks = risks.len(),
                    "alert risks changed"
                );
            }
            updates.alerts = risks;
        }
        Err(error) => {
            tracing::warn!(%error, "cannot read the firing alerts; using the ones read before")
        }
    }
}

//! Which tenant an operation runs for: fixed, or derived from the running
//! action's context (as the Firestore store's tenant prefix).

use std::sync::Arc;

use genkit_core::context::ActionContext;
use genkit_core::tracing::current_context;
use genkit_core::{Error, Result, StatusCode};

/// The tenant of a store configured with none, and of every row written
/// before tenants existed (the `0002_tenants` migration puts them there).
pub const DEFAULT_TENANT: &str = "global";

/// How a store picks the tenant of an operation.
#[derive(Clone)]
pub(crate) enum Tenant {
    /// The same tenant for every operation.
    Fixed(String),
    /// The tenant of the running action's context.
    Derived(Arc<dyn Fn(&ActionContext) -> String + Send + Sync>),
}

impl Default for Tenant {
    fn default() -> Self {
        Tenant::Fixed(DEFAULT_TENANT.to_owned())
    }
}

impl Tenant {
    /// The tenant of the operation running now. Stores run in the caller's
    /// task, so the context is the calling action's (an agent turn's, with
    /// its request's auth). An empty tenant is refused (`PERMISSION_DENIED`)
    /// rather than shared by every request a `tenant_fn` could not place.
    pub(crate) fn current(&self) -> Result<String> {
        let tenant = match self {
            Tenant::Fixed(t) => t.clone(),
            Tenant::Derived(f) => f(&current_context()),
        };
        if tenant.is_empty() {
            return Err(Error::user_facing(
                StatusCode::PermissionDenied,
                "the session store has no tenant for this request (its tenant is empty)",
            ));
        }
        Ok(tenant)
    }
}

/// The tenant options of a public store type (with a `core` field).
macro_rules! tenant_options {
    ($store:ty) => {
        impl $store {
            /// Scopes every operation of this store to `tenant` (default
            /// [`DEFAULT_TENANT`](crate::DEFAULT_TENANT)): its sessions,
            /// snapshots and side effects are invisible to stores of other
            /// tenants on the same database, even under the same ids.
            #[must_use]
            pub fn tenant(mut self, tenant: impl Into<String>) -> Self {
                self.core.tenant = $crate::tenant::Tenant::Fixed(tenant.into());
                self
            }

            /// Scopes each operation to the tenant `tenant` derives from the
            /// running action's context (e.g. the authenticated user's
            /// organization), as the Firestore store's `prefix_fn`. An
            /// operation whose tenant is empty is refused
            /// (`PERMISSION_DENIED`).
            #[must_use]
            pub fn tenant_fn(
                mut self,
                tenant: impl Fn(&genkit_core::context::ActionContext) -> String
                + Send
                + Sync
                + 'static,
            ) -> Self {
                self.core.tenant = $crate::tenant::Tenant::Derived(std::sync::Arc::new(tenant));
                self
            }
        }
    };
}

pub(crate) use tenant_options;

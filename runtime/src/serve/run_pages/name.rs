//! How a run's workflow is named to its tenant.

use crate::serve::tenant::Tenant;

/// How a run's workflow is shown to the tenant: its catalog name, or its
/// path beneath the tenant's workdir (a `workflowText` run's file), else
/// the file's name alone — never a path on the server. A pipeline's text
/// is shown as it is.
pub fn shown_name(tenant: &Tenant, name: &str) -> String {
    let path = std::path::Path::new(name);
    if !path.is_absolute() {
        // A tenant's journal names a catalog file relative to its catalog
        // directory (`app::journal`; catalog files lie directly in it), a
        // workflowText run's beneath the workdir.
        let catalog = (!tenant.workdir().join(path).is_file())
            .then(|| {
                tenant
                    .settings
                    .catalog
                    .entries
                    .iter()
                    .find(|e| e.file.file_name() == Some(path.as_os_str()))
            })
            .flatten();
        return catalog.map_or_else(|| name.to_string(), |e| e.name.clone());
    }
    let real = path.canonicalize().ok();
    let same = |f: &std::path::Path| f == path || (real.is_some() && f.canonicalize().ok() == real);
    if let Some(e) = tenant
        .settings
        .catalog
        .entries
        .iter()
        .find(|e| same(&e.file))
    {
        return e.name.clone();
    }
    let within = |p: &std::path::Path| {
        p.strip_prefix(tenant.workdir())
            .ok()
            .filter(|r| !r.as_os_str().is_empty())
            .map(|r| r.to_string_lossy().into_owned())
    };
    if let Some(r) = within(path).or_else(|| real.as_deref().and_then(within)) {
        return r;
    }
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

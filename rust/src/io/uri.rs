//! Turning a user's path or URI (and storage options) into a reader, a writer or a store.
//!
//! * plain paths and `file://` URIs → the local file system (positional reads);
//! * `memory://name/...` → one in-process memory store shared by the whole process;
//! * `s3://bucket/...` (also `s3a://`), `gs://bucket/...`, `az://container/...`,
//!   `abfs[s]://container@account.dfs.core.windows.net/...` → `object_store`'s Amazon S3,
//!   Google Cloud Storage and Azure clients;
//! * anything else → [`Error::NotSupported`].
//!
//! Cloud clients are configured like pylance's: the environment variables `object_store`
//! reads (`AWS_*`, `GOOGLE_*`, `AZURE_*`) first, then the `storage_options` given, whose keys
//! are the same (`aws_access_key_id`, `aws_endpoint`, `region`, `allow_http`,
//! `google_service_account`, `azure_storage_account_name`, ...). An unknown key is an error,
//! never silently dropped. Two lancepy options control retries: `client_max_retries` and
//! `client_retry_timeout` (seconds).
//!
//! A built client is cached per process (keyed by scheme, bucket and options) so that every
//! dataset, fragment and file on one bucket shares its connection pool. The cache is dropped
//! after `fork()`: a child must not reuse its parent's connections, whose driving tasks lived
//! on the parent's runtime threads (DataLoader workers fork).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, RetryConfig};

use super::{LocalReader, LocalWriter, ObjectStoreReader, ObjectStoreWriter, ReaderRef, Writer};
use crate::error::{Error, Result};

/// Options of a cloud store (`aws_access_key_id`, `aws_endpoint`, ...): string keys and
/// values, as pylance's `storage_options`. Sorted, so equal options compare equal.
pub type StorageOptions = BTreeMap<String, String>;

/// lancepy's own option: how many times a failed request is retried.
pub const OPT_MAX_RETRIES: &str = "client_max_retries";
/// lancepy's own option: seconds after which a request is no longer retried.
pub const OPT_RETRY_TIMEOUT: &str = "client_retry_timeout";

/// The kind of cloud store a URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Cloud {
    S3,
    Gcs,
    Azure,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Spec {
    Memory,
    Cloud {
        cloud: Cloud,
        /// `scheme://authority` (the bucket or container).
        base: String,
        options: StorageOptions,
        /// The environment variables the client builder reads (`AWS_*`, `GOOGLE_*`,
        /// `AZURE_*`) when the handle was made: they configure the client as much as
        /// `options` do (credentials, endpoint, region), so a change makes another client.
        env: Vec<(String, String)>,
    },
}

/// The environment variables `object_store`'s builders read (`from_env`), sorted.
fn cloud_env() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| k.starts_with(p)))
        .collect();
    env.sort();
    env
}

/// A fork-safe handle on an object store: the client is looked up (or rebuilt after a
/// fork) on each use.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StoreHandle {
    spec: Arc<Spec>,
}

impl StoreHandle {
    /// The process-wide `memory://` store.
    pub fn memory() -> Self {
        Self { spec: Arc::new(Spec::Memory) }
    }

    /// The client.
    pub fn get(&self) -> Result<Arc<dyn ObjectStore>> {
        match self.spec.as_ref() {
            Spec::Memory => Ok(memory_store()),
            Spec::Cloud { .. } => cached_client(&self.spec),
        }
    }

    /// Whether requests go over the network (reads are then planned for object storage:
    /// wide coalescing, concurrent requests).
    pub fn is_remote(&self) -> bool {
        matches!(self.spec.as_ref(), Spec::Cloud { .. })
    }
}

/// Where a URI points.
#[derive(Debug, Clone)]
pub enum ResolvedUri {
    /// A local file-system path.
    Local(PathBuf),
    /// An object in an `object_store`.
    Object {
        /// The store.
        store: StoreHandle,
        /// The object's path inside the store.
        location: ObjectPath,
    },
}

/// The process-wide store behind `memory://`. Shared on purpose: `memory://name` data lives
/// as long as the process and is reached by its path alone (no options apply), so a dataset
/// written there can be reopened and appended to by name. (pylance 14 gives every open a new
/// empty store instead; an unnamed `memory://` gets a unique hidden name in the Python layer,
/// so it is fresh each call as in pylance.)
pub fn memory_store() -> Arc<dyn ObjectStore> {
    static MEM: OnceLock<Arc<InMemory>> = OnceLock::new();
    MEM.get_or_init(|| Arc::new(InMemory::new())).clone()
}

type ClientCache = HashMap<Arc<Spec>, Arc<dyn ObjectStore>>;

fn cached_client(spec: &Arc<Spec>) -> Result<Arc<dyn ObjectStore>> {
    static CACHE: Mutex<Option<(u32, ClientCache)>> = Mutex::new(None);
    let pid = std::process::id();
    let mut guard = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_some_and(|(owner, _)| *owner != pid) {
        // Clients of the parent process: their pooled connections belong to tasks of a
        // runtime whose threads do not exist here. Leaked, not dropped, for the same reason.
        if let Some(stale) = guard.take() {
            std::mem::forget(stale);
        }
    }
    let (_, cache) = guard.get_or_insert_with(|| (pid, HashMap::new()));
    if let Some(c) = cache.get(spec) {
        return Ok(c.clone());
    }
    let client = build_client(spec)?;
    cache.insert(spec.clone(), client.clone());
    Ok(client)
}

fn unknown_key(scheme: &str, key: &str) -> Error {
    Error::not_supported(format!(
        "storage option {key:?} is not known for {scheme}:// URIs (keys are object_store's / pylance's, e.g. \
         aws_access_key_id, aws_secret_access_key, aws_session_token, aws_region, aws_endpoint, allow_http, \
         virtual_hosted_style_request, google_service_account, azure_storage_account_name, azure_storage_account_key, \
         timeout, connect_timeout, {OPT_MAX_RETRIES}, {OPT_RETRY_TIMEOUT})"
    ))
}

fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

/// The retry policy from lancepy's options (object_store's defaults otherwise).
fn retry_config(options: &StorageOptions) -> Result<Option<RetryConfig>> {
    let retries = options.get(OPT_MAX_RETRIES);
    let timeout = options.get(OPT_RETRY_TIMEOUT);
    if retries.is_none() && timeout.is_none() {
        return Ok(None);
    }
    let mut cfg = RetryConfig::default();
    if let Some(r) = retries {
        cfg.max_retries = r.trim().parse().map_err(|_| {
            Error::invalid_input(format!("storage option {OPT_MAX_RETRIES} must be a non-negative integer, got {r:?}"))
        })?;
    }
    if let Some(t) = timeout {
        let secs: f64 =
            t.trim().parse().ok().filter(|s: &f64| s.is_finite() && *s >= 0.0).ok_or_else(|| {
                Error::invalid_input(format!("storage option {OPT_RETRY_TIMEOUT} must be seconds >= 0, got {t:?}"))
            })?;
        cfg.retry_timeout = Duration::from_secs_f64(secs);
    }
    Ok(Some(cfg))
}

fn config_error(base: &str, e: object_store::Error) -> Error {
    Error::invalid_input(format!("cannot configure a client for {base}: {e}"))
}

fn build_client(spec: &Spec) -> Result<Arc<dyn ObjectStore>> {
    let Spec::Cloud { cloud, base, options, .. } = spec else {
        return Ok(memory_store());
    };
    let own = |k: &str| k == OPT_MAX_RETRIES || k == OPT_RETRY_TIMEOUT;
    let retry = retry_config(options)?;
    let client: Arc<dyn ObjectStore> = match cloud {
        Cloud::S3 => {
            let mut b = AmazonS3Builder::from_env();
            for (k, v) in options.iter().filter(|(k, _)| !own(k)) {
                let key = AmazonS3ConfigKey::from_str(&k.to_ascii_lowercase()).map_err(|_| unknown_key("s3", k))?;
                b = b.with_config(key, v);
            }
            b = b.with_url(base.as_str());
            if let Some(r) = retry {
                b = b.with_retry(r);
            }
            check_aws_credentials(&b, base)?;
            Arc::new(b.build().map_err(|e| config_error(base, e))?)
        }
        Cloud::Gcs => {
            let mut b = GoogleCloudStorageBuilder::from_env();
            for (k, v) in options.iter().filter(|(k, _)| !own(k)) {
                let key = GoogleConfigKey::from_str(&k.to_ascii_lowercase()).map_err(|_| unknown_key("gs", k))?;
                b = b.with_config(key, v);
            }
            b = b.with_url(base.as_str());
            if let Some(r) = retry {
                b = b.with_retry(r);
            }
            Arc::new(b.build().map_err(|e| config_error(base, e))?)
        }
        Cloud::Azure => {
            let mut b = MicrosoftAzureBuilder::from_env();
            for (k, v) in options.iter().filter(|(k, _)| !own(k)) {
                let key = AzureConfigKey::from_str(&k.to_ascii_lowercase()).map_err(|_| unknown_key("az", k))?;
                b = b.with_config(key, v);
            }
            b = b.with_url(base.as_str());
            if let Some(r) = retry {
                b = b.with_retry(r);
            }
            Arc::new(b.build().map_err(|e| config_error(base, e))?)
        }
    };
    Ok(client)
}

/// Without explicit credentials the S3 client asks the cloud instance-metadata service. The
/// AWS SDKs skip that when `AWS_EC2_METADATA_DISABLED` is true; `object_store` does not, so
/// lancepy refuses up front instead of contacting an address the user ruled out.
fn check_aws_credentials(b: &AmazonS3Builder, base: &str) -> Result<()> {
    let env_true = |k: &str| std::env::var(k).is_ok_and(|v| truthy(&v));
    if !env_true("AWS_EC2_METADATA_DISABLED") {
        return Ok(());
    }
    let has = |k: AmazonS3ConfigKey| b.get_config_value(&k).is_some_and(|v| !v.is_empty());
    let anonymous = b.get_config_value(&AmazonS3ConfigKey::SkipSignature).is_some_and(|v| truthy(&v));
    let other_provider = std::env::var("AWS_WEB_IDENTITY_TOKEN_FILE").is_ok()
        || has(AmazonS3ConfigKey::ContainerCredentialsRelativeUri)
        || has(AmazonS3ConfigKey::ContainerCredentialsFullUri);
    if has(AmazonS3ConfigKey::AccessKeyId) || has(AmazonS3ConfigKey::SecretAccessKey) || anonymous || other_provider {
        return Ok(());
    }
    Err(Error::invalid_input(format!(
        "no AWS credentials for {base}: pass aws_access_key_id and aws_secret_access_key in storage_options (or set \
         AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, or aws_skip_signature=true for a public bucket); the instance-metadata \
         fallback is disabled by AWS_EC2_METADATA_DISABLED"
    )))
}

fn cloud_of(scheme: &str) -> Option<Cloud> {
    match scheme {
        "s3" | "s3a" => Some(Cloud::S3),
        "gs" | "gcs" => Some(Cloud::Gcs),
        "az" | "azure" | "abfs" | "abfss" | "adl" => Some(Cloud::Azure),
        _ => None,
    }
}

/// Resolves `uri` (a path or a URI) with no storage options.
pub fn resolve(uri: &str) -> Result<ResolvedUri> {
    resolve_with(uri, &StorageOptions::new())
}

/// Resolves `uri` (a path or a URI); `options` configure cloud clients. Options given for a
/// local path or `memory://` are an error (nothing would use them).
pub fn resolve_with(uri: &str, options: &StorageOptions) -> Result<ResolvedUri> {
    let local_options = || -> Result<()> {
        match options.keys().next() {
            None => Ok(()),
            Some(k) => Err(Error::not_supported(format!(
                "storage option {k:?} given for {uri:?}: storage options apply to object-store URIs (s3://, gs://, az://) only"
            ))),
        }
    };
    if let Some(rest) = uri.strip_prefix("memory://") {
        local_options()?;
        let location =
            ObjectPath::parse(rest).map_err(|e| Error::invalid_input(format!("invalid memory:// path {uri:?}: {e}")))?;
        return Ok(ResolvedUri::Object { store: StoreHandle::memory(), location });
    }
    if let Some(rest) = uri.strip_prefix("file://") {
        local_options()?;
        return Ok(ResolvedUri::Local(PathBuf::from(rest)));
    }
    if let Some((scheme, rest)) = uri.split_once("://") {
        let lower = scheme.to_ascii_lowercase();
        let Some(cloud) = cloud_of(&lower) else {
            return Err(Error::not_supported(format!(
                "storage scheme {scheme:?} in {uri:?}; supported: local paths, file://, memory://, s3://, gs://, az://, abfss://"
            )));
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(Error::invalid_input(format!("{uri:?} names no bucket")));
        }
        let location =
            ObjectPath::parse(path).map_err(|e| Error::invalid_input(format!("invalid object path in {uri:?}: {e}")))?;
        let spec =
            Arc::new(Spec::Cloud { cloud, base: format!("{lower}://{authority}"), options: options.clone(), env: cloud_env() });
        // Built now, so that a bad option or a missing credential fails on open.
        cached_client(&spec)?;
        return Ok(ResolvedUri::Object { store: StoreHandle { spec }, location });
    }
    if uri.is_empty() {
        return Err(Error::invalid_input("empty path"));
    }
    local_options()?;
    Ok(ResolvedUri::Local(PathBuf::from(uri)))
}

/// Opens `uri` for random-access reads.
pub fn open_reader(uri: &str) -> Result<ReaderRef> {
    open_reader_with(uri, &StorageOptions::new())
}

/// Opens `uri` for random-access reads, with storage options.
pub fn open_reader_with(uri: &str, options: &StorageOptions) -> Result<ReaderRef> {
    resolve_with(uri, options)?.open_reader(uri)
}

impl ResolvedUri {
    /// Opens the resolved file (`uri` names it in errors and in the reader's path).
    pub fn open_reader(self, uri: &str) -> Result<ReaderRef> {
        Ok(match self {
            ResolvedUri::Local(p) => Arc::new(LocalReader::open(p)?),
            ResolvedUri::Object { store, location } => Arc::new(ObjectStoreReader::new(store, location, uri.to_string())),
        })
    }

    /// Where the bytes come from, as a key for caches of opened files: the local file
    /// system, or one object store as configured (scheme, bucket, storage options and the
    /// cloud environment variables). Two URIs read through different credentials,
    /// endpoints or regions never have equal origins.
    pub fn origin(&self) -> Origin {
        match self {
            ResolvedUri::Local(_) => Origin::Local,
            ResolvedUri::Object { store, .. } => Origin::Object(store.clone()),
        }
    }
}

/// See [`ResolvedUri::origin`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    /// The local file system (no options apply).
    Local,
    /// An object store and everything that configures its client.
    Object(StoreHandle),
}

/// Creates a writer for a new object at `uri`.
pub fn open_writer(uri: &str) -> Result<Box<dyn Writer>> {
    open_writer_with(uri, &StorageOptions::new())
}

/// Creates a writer for a new object at `uri`, with storage options.
pub fn open_writer_with(uri: &str, options: &StorageOptions) -> Result<Box<dyn Writer>> {
    Ok(match resolve_with(uri, options)? {
        ResolvedUri::Local(p) => Box::new(LocalWriter::create(p)?),
        ResolvedUri::Object { store, location } => Box::new(ObjectStoreWriter::new(store, location, uri.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> StorageOptions {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn s3_uris_resolve_with_pylance_keys() {
        let o = opts(&[
            ("aws_access_key_id", "k"),
            ("aws_secret_access_key", "s"),
            ("aws_endpoint", "http://127.0.0.1:1"),
            ("region", "us-east-1"),
            ("allow_http", "true"),
            (OPT_MAX_RETRIES, "0"),
        ]);
        match resolve_with("s3://bucket/a/b.lance", &o).unwrap() {
            ResolvedUri::Object { store, location } => {
                assert!(store.is_remote());
                assert_eq!(location.as_ref(), "a/b.lance");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gcs_and_azure_uris_resolve() {
        let gs = resolve_with("gs://bucket/a/ds.lance", &opts(&[("google_skip_signature", "true")])).unwrap();
        assert!(matches!(gs, ResolvedUri::Object { ref location, .. } if location.as_ref() == "a/ds.lance"));
        let o = opts(&[("azure_storage_account_name", "acct"), ("azure_storage_account_key", "a2V5"), ("allow_http", "true")]);
        for uri in ["az://container/a/ds.lance", "abfss://container@acct.dfs.core.windows.net/a/ds.lance"] {
            let az = resolve_with(uri, &o).unwrap();
            assert!(matches!(az, ResolvedUri::Object { ref location, .. } if location.as_ref() == "a/ds.lance"), "{uri}");
        }
        let e = resolve_with("gs://bucket/x", &opts(&[("aws_access_key_id", "k")])).unwrap_err();
        assert!(matches!(e, Error::NotSupported(m) if m.contains("gs://")));
    }

    #[test]
    fn bad_options_are_errors() {
        let e = resolve_with("s3://bucket/x", &opts(&[("aws_acces_key_id", "k")])).unwrap_err();
        assert!(matches!(e, Error::NotSupported(m) if m.contains("aws_acces_key_id")));
        assert!(matches!(resolve_with("/tmp/x", &opts(&[("region", "x")])), Err(Error::NotSupported(_))));
        assert!(matches!(resolve_with("s3:///x", &StorageOptions::new()), Err(Error::InvalidInput(_))));
        assert!(matches!(resolve_with("ftp://h/x", &StorageOptions::new()), Err(Error::NotSupported(_))));
        let e = resolve_with("s3://b/x", &opts(&[("aws_access_key_id", "k"), (OPT_MAX_RETRIES, "-1")])).unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)));
    }
}

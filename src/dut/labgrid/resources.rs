//! A place's resources as data: `labgrid-client -p PLACE env` prints them as YAML (never the
//! human `show` output), read here into [`PlaceResources`]: the console (NetworkSerialPort), whether
//! there is a power switch, and the values a flash command may use as placeholders. Pure.

use std::collections::BTreeMap;

/// One resource of a place: its class and its parameters as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub class: String,
    pub params: BTreeMap<String, String>,
}

/// What `env` says about a place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceResources {
    /// The place's name (with tags, the place the reservation was given).
    pub place: String,
    pub resources: Vec<Resource>,
}

/// The console a place exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkSerial {
    pub host: String,
    pub port: u16,
    /// `raw` or `rfc2217`.
    pub protocol: String,
    pub speed: u32,
}

#[derive(serde::Deserialize)]
struct Env {
    targets: BTreeMap<String, Target>,
}

#[derive(serde::Deserialize)]
struct Target {
    #[serde(default)]
    resources: Vec<BTreeMap<String, BTreeMap<String, yaml_serde::Value>>>,
}

/// Reads `env`'s YAML.
pub fn parse_env(yaml: &str) -> Result<PlaceResources, String> {
    let env: Env = yaml_serde::from_str(yaml)
        .map_err(|e| format!("`labgrid-client env` printed YAML fwfix cannot read: {e}"))?;
    let mut targets = env.targets.into_iter();
    let (place, target) = targets
        .next()
        .ok_or("`labgrid-client env` named no place".to_string())?;
    let mut resources = Vec::new();
    for entry in target.resources {
        for (class, params) in entry {
            let params = params
                .into_iter()
                .filter_map(|(k, v)| scalar(&v).map(|v| (k, v)))
                .collect();
            resources.push(Resource { class, params });
        }
    }
    Ok(PlaceResources { place, resources })
}

fn scalar(value: &yaml_serde::Value) -> Option<String> {
    match value {
        yaml_serde::Value::String(s) => Some(s.clone()),
        yaml_serde::Value::Number(n) => Some(n.to_string()),
        yaml_serde::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl PlaceResources {
    fn first(&self, class: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.class == class)
    }

    /// The place's NetworkSerialPort.
    pub fn serial(&self) -> Result<NetworkSerial, String> {
        let r = self.first("NetworkSerialPort").ok_or_else(|| {
            format!(
                "place {} has no NetworkSerialPort for the console (it has: {})",
                self.place,
                self.classes()
            )
        })?;
        let get = |k: &str| r.params.get(k).cloned();
        let host = get("host").ok_or("its NetworkSerialPort has no host")?;
        let port = get("port")
            .and_then(|p| p.parse().ok())
            .ok_or("its NetworkSerialPort has no valid port")?;
        Ok(NetworkSerial {
            host,
            port,
            protocol: get("protocol").unwrap_or_else(|| "rfc2217".into()),
            speed: get("speed").and_then(|s| s.parse().ok()).unwrap_or(115_200),
        })
    }

    /// Whether `labgrid-client power` has something to switch.
    pub fn has_power(&self) -> bool {
        self.resources
            .iter()
            .any(|r| r.class.ends_with("PowerPort"))
    }

    fn classes(&self) -> String {
        let names: Vec<&str> = self.resources.iter().map(|r| r.class.as_str()).collect();
        if names.is_empty() {
            "no resources".into()
        } else {
            names.join(", ")
        }
    }

    /// The flash command's placeholders: `{place}`; each parameter as `{key}` (the first
    /// resource that has it wins, in `env`'s order) and as `{class_key}` with the class in lower
    /// case (`{networkserialport_host}`), for when two resources share a key.
    pub fn placeholders(&self) -> Vec<(String, String)> {
        let mut values = vec![("place".to_string(), self.place.clone())];
        for r in &self.resources {
            for (k, v) in &r.params {
                let key = k.to_ascii_lowercase();
                values.push((format!("{}_{key}", r.class.to_ascii_lowercase()), v.clone()));
                if !values.iter().any(|(n, _)| *n == key) {
                    values.push((key, v.clone()));
                }
            }
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As labgrid-client 26.0.1 printed it for a place with a serial and a power port.
    const ENV: &str = "targets:
  p1:
    resources:
    - NetworkPowerPort:
        index: 0
        host: http://127.0.0.1:45002/relay/{index}/{value}
        model: simplerest
    - NetworkSerialPort:
        port: 45001
        protocol: raw
        host: 127.0.0.1
        speed: 115200

";

    #[test]
    fn reads_the_console_power_and_placeholders() {
        let place = parse_env(ENV).unwrap();
        assert_eq!(place.place, "p1");
        assert_eq!(
            place.serial().unwrap(),
            NetworkSerial {
                host: "127.0.0.1".into(),
                port: 45001,
                protocol: "raw".into(),
                speed: 115_200
            }
        );
        assert!(place.has_power());
        let values = place.placeholders();
        let get = |k: &str| values.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("place"), Some("p1"));
        // The power port comes first in env's order, so its host is `{host}`.
        assert_eq!(
            get("host"),
            Some("http://127.0.0.1:45002/relay/{index}/{value}")
        );
        assert_eq!(get("networkserialport_host"), Some("127.0.0.1"));
        assert_eq!(get("port"), Some("45001"));
    }

    #[test]
    fn says_what_is_missing() {
        let bare = parse_env("targets:\n  p2:\n    resources: []\n").unwrap();
        let e = bare.serial().unwrap_err();
        assert!(
            e.contains("p2 has no NetworkSerialPort") && e.contains("no resources"),
            "{e}"
        );
        assert!(!bare.has_power());
        assert!(parse_env("targets: {}\n").is_err());
        assert!(parse_env("[not yaml").unwrap_err().contains("cannot read"));
    }
}

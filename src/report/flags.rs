//! Which report flags a format can honour: a flag the chosen format would
//! ignore is refused, naming it, before any model is read.

use super::{Format, SortKey, model_explorer::Metric};
use crate::error::{Error, Result};

/// The report flags given on a command line (those left out are `false` or
/// `None`), checked against a format with [`ReportFlags::check`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportFlags {
    pub columns: bool,
    pub unit: bool,
    pub digits: bool,
    pub metric: Option<Metric>,
    pub sort: Option<SortKey>,
    /// Whether a device was given (`--device`).
    pub device: bool,
    /// Whether a profile was given (`--profile`).
    pub profile: bool,
}

impl ReportFlags {
    /// Refuses the flags `format` cannot honour, and those that need a
    /// device when none was given.
    pub fn check(&self, format: Format) -> Result<()> {
        let mut ignored = Vec::new();
        let tabular = matches!(format, Format::Table | Format::Md | Format::Csv);
        if self.columns && !tabular {
            ignored.push("--columns");
        }
        if self.unit && !tabular {
            ignored.push("--unit");
        }
        if self.digits && !(tabular || format == Format::Html) {
            ignored.push("--digits");
        }
        if self.metric.is_some() && format != Format::ModelExplorer {
            ignored.push("--metric");
        }
        if !ignored.is_empty() {
            return Err(Error::Usage(format!(
                "{} cannot be honoured by --format {}; drop {}",
                ignored.join(", "),
                name(format),
                if ignored.len() == 1 { "it" } else { "them" }
            )));
        }
        if matches!(self.metric, Some(Metric::BoundS | Metric::PredictedS)) && !self.device {
            let name = self.metric.map_or("", Metric::name);
            return Err(Error::Usage(format!("--metric {name} needs --device")));
        }
        if self.metric == Some(Metric::MeasuredS) && !self.profile {
            return Err(Error::Usage("--metric measured_s needs --profile".into()));
        }
        if let Some(k) = self.sort.filter(|k| k.needs_device() && !self.device) {
            return Err(Error::Usage(format!("--sort {} needs --device", k.name())));
        }
        if self.sort == Some(SortKey::MeasuredS) && !self.profile {
            return Err(Error::Usage("--sort measured_s needs --profile".into()));
        }
        Ok(())
    }
}

/// A format's `--format` name.
pub fn name(format: Format) -> &'static str {
    match format {
        Format::Table => "table",
        Format::Md => "md",
        Format::Csv => "csv",
        Format::Json => "json",
        Format::Html => "html",
        Format::ModelExplorer => "model-explorer",
    }
}

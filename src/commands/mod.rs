//! The library side of each `c3` command: what the command line does once
//! its flags are parsed (the clap definitions in `cli` only parse and call
//! here). Each command checks its `-o` target and its report flags before
//! reading a model, writes through [`crate::output`], and returns what goes
//! to standard output.

use std::io::IsTerminal;

mod batch;
pub mod parse;

pub use batch::CHILD_MODEL;

use crate::error::{Error, Result};
use crate::model::{EstimateOptions, Model};
use crate::output::{self, Kind, Output};
use crate::report::model_explorer::Metric;
use crate::report::{
    self, ColorChoice, Column, Format, ListFormat, Parts, ReportFlags, ReportOptions, SortKey, Unit,
};
use crate::rules::RuleSet;

/// Where `-o` sends the output (`None`: standard output), and whether an
/// existing file may be replaced.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub path: Option<String>,
    pub force: bool,
}

impl Target {
    /// The checked output, before any model is read; `model` is never the
    /// output.
    pub fn check(&self, kind: Kind, models: &[&str]) -> Result<Output> {
        match &self.path {
            Some(t) => Output::check(t, kind, self.force, models),
            None => Ok(Output::stdout()),
        }
    }
}

/// The report flags of `c3 estimate` as given (unset ones `None`): the
/// format and its defaults are settled once it is known where the output
/// goes.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    pub format: Option<Format>,
    pub unit: Option<Unit>,
    pub digits: Option<u8>,
    pub columns: Option<Vec<Column>>,
    pub parts: Parts,
    pub metric: Option<Metric>,
    pub sort: Option<SortKey>,
    pub top: Option<usize>,
    pub color: ColorChoice,
    pub depth: Option<usize>,
}

impl Default for ReportRequest {
    fn default() -> Self {
        Self {
            format: None,
            unit: None,
            digits: None,
            columns: None,
            parts: Parts::Both,
            metric: None,
            sort: None,
            top: None,
            color: ColorChoice::Auto,
            depth: None,
        }
    }
}

impl ReportRequest {
    /// The flags given, for [`ReportFlags::check`].
    pub fn flags(&self, device: bool, profile: bool) -> ReportFlags {
        ReportFlags {
            profile,
            columns: self.columns.is_some(),
            unit: self.unit.is_some(),
            digits: self.digits.is_some(),
            metric: self.metric,
            sort: self.sort,
            device,
        }
    }

    /// The report options for output to `out`: the format asked for, else a
    /// table on a terminal and Markdown otherwise; checked against the flags.
    pub fn options(&self, out: &Output, device: bool, profile: bool) -> Result<ReportOptions> {
        let terminal = std::io::stdout().is_terminal() && out.is_stdout();
        let format = match self.format {
            Some(f) => f,
            None if terminal => Format::Table,
            None => Format::Md,
        };
        self.flags(device, profile).check(format)?;
        Ok(ReportOptions {
            format,
            unit: self.unit.unwrap_or(Unit::Auto),
            digits: self.digits.unwrap_or(3).into(),
            columns: match &self.columns {
                Some(c) => c.clone(),
                None => report::parse_columns("default").map_err(Error::Usage)?,
            },
            parts: self.parts,
            metric: self.metric.unwrap_or(Metric::Flops),
            sort: self.sort,
            top: self.top,
            width: report::terminal_width(terminal),
            color: format == Format::Table && self.color.wanted(terminal),
            depth: self.depth,
            ..ReportOptions::default()
        })
    }
}

/// Sends `text` to `out`: returned when `out` is standard output, written
/// to the file otherwise.
pub fn deliver(out: &Output, text: String) -> Result<String> {
    if out.is_stdout() {
        return Ok(text);
    }
    out.write(text.as_bytes())?;
    Ok(String::new())
}

/// Warns on stderr of the layers no rule counted.
fn warn_unsupported(estimate: &crate::model::Estimate) {
    if let Some(ops) = estimate.unsupported_ops() {
        let count = estimate.report.unsupported.len();
        crate::error::warn(&format!(
            "{count} layer(s) are not counted (see the unsupported list): {}",
            report::text::shown(&ops)
        ));
    }
}

/// `c3 estimate MODEL`: one model's report.
pub fn estimate(
    model: &str,
    opts: &EstimateOptions,
    req: &ReportRequest,
    target: &Target,
) -> Result<String> {
    let out = target.check(Kind::Report, &[model])?;
    let mut report_opts = req.options(&out, opts.device.is_some(), !opts.profile.is_empty())?;
    opts.check()?;
    report_opts.about = opts.about(model);
    let fit = opts.training.as_ref().and_then(|t| t.fit.as_deref());
    let estimate = if report_opts.format == Format::ModelExplorer || fit.is_some() {
        let model_file = Model::open(model)?;
        if report_opts.format == Format::ModelExplorer {
            report_opts.node_ids = model_file.node_ids(opts)?;
        }
        match fit {
            Some(dim) => model_file.estimate_fitted(opts, dim)?,
            None => model_file.into_estimate(opts)?,
        }
    } else {
        Model::estimate_file(model, opts)?
    };
    warn_unsupported(&estimate);
    out.write_with(|w| estimate.write(&report_opts, w))?;
    crate::release(estimate);
    Ok(String::new())
}

/// `c3 calibrate REPORT... -o DIR --name NAME`: writes DIR/devices.yaml,
/// and returns what the fit says of itself. `base`: a device of the
/// built-in catalog the efficiencies are relative to.
pub fn calibrate(
    reports: &[String],
    target: &Target,
    base: Option<&str>,
    mut opts: crate::calibrate::CalibrateOptions,
) -> Result<String> {
    let name = opts.name.trim().to_string();
    if name.is_empty() || name.len() > 100 || name.chars().any(char::is_control) {
        return Err(Error::Usage(
            "--name: a device name of 1 to 100 printable characters".into(),
        ));
    }
    opts.name = name.clone();
    if let Some(b) = base {
        let rules = RuleSet::builtin()?;
        opts.base = Some(rules.device(b)?.clone());
    }
    let folder = target.path.clone().unwrap_or_default();
    if folder.is_empty() || folder == output::STDOUT {
        return Err(Error::Usage(
            "-o: a pack folder to write devices.yaml in".into(),
        ));
    }
    let dir = std::path::Path::new(&folder);
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Usage(format!("-o {folder}: not a folder")));
    }
    let file = dir.join("devices.yaml").display().to_string();
    let inputs: Vec<&str> = reports.iter().map(String::as_str).collect();
    // The folder is made for the check, and taken away again if nothing
    // is written in it.
    let created = !dir.exists();
    if created {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(&folder, e))?;
    }
    let written = Output::check(&file, Kind::Pack, target.force, &inputs).and_then(|out| {
        let fitted = crate::calibrate::calibrate(reports, &opts)?;
        out.write(fitted.device_yaml.as_bytes())?;
        Ok(fitted.summary)
    });
    let summary = match written {
        Ok(s) => s,
        Err(e) => {
            if created {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(e);
        }
    };
    let mut text = summary.join("\n");
    text.push_str(&format!(
        "\nwrote {file}: predict with --rules {folder} --device {name}\n"
    ));
    Ok(text)
}

/// `c3 annotate MODEL -o OUT.onnx`: the model with each node's costs.
pub fn annotate(model: &str, opts: &EstimateOptions, target: &Target) -> Result<String> {
    let Some(path) = &target.path else {
        return Err(Error::Usage("annotate needs -o OUT.onnx".into()));
    };
    let out = target.check(Kind::Onnx, &[model])?;
    opts.check()?;
    let (nodes, value_info) = Model::open(model)?.annotate_to(opts, &out)?;
    if !out.is_stdout() {
        eprintln!("wrote {path}: costs on {nodes} nodes, {value_info} inferred value_info entries");
    }
    Ok(String::new())
}

/// `c3 docs`: writes DETAILS.md (`-o -`: returns it), or with `check`
/// fails when the file differs from what the rules render.
pub fn docs(path: Option<&str>, check: bool, force: bool, pack: Option<&str>) -> Result<String> {
    let path = path.unwrap_or(if pack.is_some() {
        output::STDOUT
    } else {
        "DETAILS.md"
    });
    let text = match pack {
        None => crate::docs::render(&RuleSet::builtin()?)?,
        Some(spec) => {
            let found = RuleSet::check_pack(spec)?;
            if let Some(e) = found.errors.first() {
                return Err(Error::Input {
                    path: spec.to_string(),
                    message: format!(
                        "{} error(s) in this pack, the first: {}; `c3 rules check {spec}` lists them",
                        found.errors.len(),
                        crate::error::one_line(&e.to_string())
                    ),
                });
            }
            let set = RuleSet::with_packs(&[spec.to_string()])?;
            crate::docs::render_pack(&set, &found.ops, spec)?
        }
    };
    // The file as it was, to say what changed: a regular file only (a
    // pipe would wait for a writer).
    let old = || {
        std::fs::metadata(path)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .and_then(|_| crate::docs::read_bounded(path).ok())
    };
    if check {
        if path == output::STDOUT {
            return Err(Error::Usage("docs --check needs a file, not -o -".into()));
        }
        if !crate::docs::is_current(path, &text)? {
            let first = old()
                .and_then(|o| crate::docs::changes(&o, &text).1)
                .map_or(String::new(), |h| format!(" (first difference: {h})"));
            let again = match pack {
                None => format!("c3 docs -o {path}"),
                Some(p) => format!("c3 docs --rules {p} -o {path}"),
            };
            return Err(Error::Stale(format!(
                "{path} is out of date with the rules{first}: run `{again}` and commit it"
            )));
        }
        eprintln!("{path} is up to date");
        return Ok(String::new());
    }
    let out = Output::check(path, Kind::Docs, force, &[])?;
    if out.is_stdout() {
        return Ok(text);
    }
    // What changed is said of a page c3 wrote, not of one --force replaces.
    let before = old().filter(|o| o.contains("<!-- Generated by `c3 docs"));
    out.write(text.as_bytes())?;
    let what = match before.map(|o| crate::docs::changes(&o, &text)) {
        None => String::new(),
        Some((_, None)) => ": nothing changed".into(),
        Some((rules, Some(_))) if rules.is_empty() => ": no rule changed".into(),
        Some((rules, _)) => {
            let shown: Vec<&str> = rules.iter().take(8).map(String::as_str).collect();
            let more = rules.len().saturating_sub(8);
            format!(
                ": {} rule(s) changed: {}{}",
                rules.len(),
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        }
    };
    eprintln!("wrote {path}{what}");
    Ok(String::new())
}

/// The bindings `shapes` takes: `--dim` and `--input`.
pub type Bindings = (
    std::collections::BTreeMap<String, i64>,
    std::collections::BTreeMap<String, Vec<u64>>,
);

/// `c3 shapes MODEL`: the listing, or with `-o` a copy of the model with
/// the inferred shapes in its value_info (and the listing only when a
/// format is given).
pub fn shapes(
    model: &str,
    (dims, inputs): &Bindings,
    format: Option<ListFormat>,
    target: &Target,
) -> Result<String> {
    let out = target.check(Kind::Onnx, &[model])?;
    if target.path.is_some() && out.is_stdout() && format.is_some() {
        return Err(Error::Usage(
            "shapes -o - writes the model to standard output: --format has no room there".into(),
        ));
    }
    // The listing goes to standard output, whether or not a model is written.
    let width = report::terminal_width(std::io::stdout().is_terminal());
    let Some(path) = &target.path else {
        let shapes = Model::shapes_listed_file(model, dims, inputs)?;
        let format = format.unwrap_or(ListFormat::Table);
        let text = report::shapes::shapes_fitted(&shapes.inferred, format, &shapes.meta, width);
        crate::release(shapes);
        return Ok(text);
    };
    // The copy needs the values' shapes and the model's bytes, not its
    // nodes: the model is read as for the listing alone, once the nodes
    // are checked for weights the copy would lose.
    let shapes = Model::shapes_copied_file(model, dims, inputs, &out)?;
    let n = shapes.write_model_to(&out)?;
    let text = match format {
        Some(f) if !out.is_stdout() => {
            report::shapes::shapes_fitted(&shapes.inferred, f, &shapes.meta, width)
        }
        _ => String::new(),
    };
    crate::release(shapes);
    if !out.is_stdout() {
        eprintln!("wrote {path} with {n} inferred value_info entries");
    }
    Ok(text)
}

/// `c3 rules check PACK`: every error of a pack on stderr, or one line
/// saying what it holds.
pub fn rules_check(spec: &str) -> Result<String> {
    let check = RuleSet::check_pack(spec)?;
    if !check.errors.is_empty() {
        for e in &check.errors {
            eprintln!("error: {}", crate::error::one_line(&e.to_string()));
        }
        return Err(Error::Input {
            path: spec.to_string(),
            message: format!("{} error(s) in this pack", check.errors.len()),
        });
    }
    // Each rule, and for one over a rule in force the fields it gives.
    let named: Vec<String> = check
        .ops
        .iter()
        .map(|op| match check.overrides.iter().find(|(o, _)| o == op) {
            Some((_, fields)) => format!("{op} (overrides {})", fields.join(", ")),
            None => format!("{op} (new)"),
        })
        .collect();
    let mut parts = vec![match check.ops.len() {
        0 => "0 rule(s)".to_string(),
        n => format!(
            "{n} rule(s), {} overriding rules in force: {}",
            check.overridden,
            named.join(", ")
        ),
    }];
    for (what, names) in [("fusion", &check.fusions), ("device", &check.devices)] {
        if !names.is_empty() {
            parts.push(format!("{} {what}(s): {}", names.len(), names.join(", ")));
        }
    }
    Ok(format!("{spec}: ok, {}\n", parts.join("; ")))
}

/// Refuses the flags of `estimate` a diff or a batch has no place for.
fn refuse(what: &str, given: &[(&str, bool)]) -> Result<()> {
    let named: Vec<&str> = given.iter().filter(|g| g.1).map(|g| g.0).collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "{what} cannot honour {}; drop {}",
        named.join(", "),
        if named.len() == 1 { "it" } else { "them" }
    )))
}

/// Refuses a format other than the four tabular and JSON ones.
fn four_formats(what: &str, opts: &ReportOptions) -> Result<()> {
    match opts.format {
        Format::Table | Format::Md | Format::Csv | Format::Json => Ok(()),
        f => Err(Error::Usage(format!(
            "{what} has no --format {}: table, md, csv or json",
            report::flags::name(f)
        ))),
    }
}

/// `c3 diff A [B]`: model B (A again when left out) under `opts_b`
/// against model A under `opts_a`, per layer, per operator type and in
/// total.
pub fn diff(
    (a, b): (&str, Option<&str>),
    (opts_a, opts_b): (&EstimateOptions, &EstimateOptions),
    req: &ReportRequest,
    target: &Target,
    changed: bool,
) -> Result<String> {
    let b = b.unwrap_or(a);
    let out = target.check(Kind::Report, &[a, b])?;
    refuse(
        "diff",
        &[
            ("--columns", req.columns.is_some()),
            ("--metric", req.metric.is_some()),
            ("--sort", req.sort.is_some()),
            ("--top", req.top.is_some()),
            ("--measured", opts_a.measured_s.is_some()),
            ("--profile", !opts_a.profile.is_empty()),
            ("--training", opts_a.training.is_some()),
        ],
    )?;
    let mut report_opts = req.options(&out, false, false)?;
    four_formats("diff", &report_opts)?;
    if a == b && opts_a.about(a) == opts_b.about(b) {
        return Err(Error::Usage(
            "diff needs a second model, or a --b-* option that changes B (`c3 diff m.onnx --b-rules fused`)".into(),
        ));
    }
    opts_a.check()?;
    opts_b.check().map_err(|e| match e {
        Error::Usage(m) => Error::Usage(format!("B (--b-*): {m}")),
        e => e,
    })?;
    // Each side estimated on a thread of its own, as `estimate` does: its
    // model's records let go once inferred. One standard input is read
    // once and estimated twice.
    let (ea, eb) = if a == b && a == output::STDOUT {
        let model = Model::open(a)?;
        std::thread::scope(|s| {
            let eb = s.spawn(|| model.estimate(opts_b));
            (model.estimate(opts_a), eb.join())
        })
    } else {
        std::thread::scope(|s| {
            let eb = s.spawn(|| Model::estimate_file(b, opts_b));
            (Model::estimate_file(a, opts_a), eb.join())
        })
    };
    let mut ea = ea?;
    let mut eb = eb.map_err(|_| Error::Usage("diff: estimating B failed".into()))??;
    // The graphs are not compared: their memory is the writing's.
    drop((std::mem::take(&mut ea.graph), std::mem::take(&mut eb.graph)));
    report_opts.about = Vec::new();
    let sides = report::diff::Sides {
        meta: (ea.meta.clone(), eb.meta.clone()),
        about: (ea.about.clone(), eb.about.clone()),
    };
    let mut d = report::diff::diff(
        (&ea.report, ea.roofline.as_ref()),
        (&eb.report, eb.roofline.as_ref()),
    );
    if changed {
        d.only_changed();
    }
    out.write_with(|w| report::diff::write(&d, &sides, &report_opts, w))?;
    crate::release((ea, eb));
    Ok(String::new())
}

/// The models `estimate` was given: each path, a folder standing for its
/// `.onnx` and `.json` files (sorted by name).
pub fn expand_models(paths: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for p in paths {
        let path = std::path::Path::new(p);
        if p == crate::output::STDOUT || !path.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut found: Vec<String> = std::fs::read_dir(path)
            .map_err(|e| Error::io(p.as_str(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "onnx" || x == "json"))
            // Anything but a folder: a link that leads nowhere (or in a
            // circle), a FIFO, is reported on its row, not left out.
            .filter(|f| f.is_symlink() || !f.is_dir())
            .map(|f| f.to_string_lossy().into_owned())
            .collect();
        if found.is_empty() {
            return Err(Error::Input {
                path: p.clone(),
                message: "a folder with no .onnx or .json file".into(),
            });
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// `c3 estimate A B C...` (or a folder): each model analysed on its own
/// thread, as many at a time as there are cores; one totals row per model.
/// A model that fails is reported on its row and the others still run;
/// then the error is [`Error::Batch`] with the worst exit code, after the
/// report is written.
pub fn estimate_many(
    models: &[String],
    opts: &EstimateOptions,
    req: &ReportRequest,
    target: &Target,
) -> Result<String> {
    if let Some(model) = batch::child_model() {
        // The parent checked the flags; its format is JSON only if asked.
        let json = req.format == Some(Format::Json);
        return batch::child(figures(&model, opts, json, req.parts));
    }
    let models = expand_models(models)?;
    let inputs: Vec<&str> = models.iter().map(String::as_str).collect();
    let out = target.check(Kind::Report, &inputs)?;
    refuse(
        "a batch of models",
        &[
            ("--columns", req.columns.is_some()),
            ("--metric", req.metric.is_some()),
            ("--sort", req.sort.is_some()),
            ("--top", req.top.is_some()),
            ("--profile", !opts.profile.is_empty()),
            ("--training", opts.training.is_some()),
        ],
    )?;
    let report_opts = req.options(&out, opts.device.is_some(), false)?;
    four_formats("a batch of models", &report_opts)?;
    if report_opts.format != Format::Json {
        refuse(
            "a table of models",
            &[
                ("--summary", req.parts == Parts::Summary),
                ("--layers", req.parts == Parts::Layers),
            ],
        )?;
    }
    opts.check()?;
    if models.iter().filter(|m| *m == output::STDOUT).count() > 1 {
        return Err(Error::Usage("standard input (`-`) can be read once".into()));
    }
    let want_json = report_opts.format == Format::Json;
    let rows = batch::rows(&models, batch::in_children(&models), |m| {
        figures(m, opts, want_json, req.parts)
    });
    let text = report::batch::render(&rows, &report_opts);
    let failed: Vec<i32> = rows
        .iter()
        .filter_map(|r| r.outcome.as_ref().err().map(|e| e.1))
        .collect();
    if failed.is_empty() {
        return deliver(&out, text);
    }
    match out.is_stdout() {
        true => output::write_stdout(text.as_bytes())?,
        false => out.write(text.as_bytes())?,
    }
    Err(Error::Batch {
        failed: failed.len(),
        total: rows.len(),
        code: failed.into_iter().max().unwrap_or(2),
    })
}

/// What a batch keeps of one model's estimate; with `json`, the estimate's
/// JSON report too.
fn figures(
    model: &str,
    opts: &EstimateOptions,
    json: bool,
    parts: Parts,
) -> Result<report::batch::BatchFigures> {
    let e = Model::open(model)?.into_estimate(opts)?;
    Ok(report::batch::BatchFigures {
        total: report::diff::Side {
            totals: e.report.total,
            live: e.report.peak.bytes,
            bound_s: e.roofline.as_ref().map(|r| r.bound_s),
        },
        unsupported: e.report.unsupported.len(),
        json: json.then(|| {
            e.render(&ReportOptions {
                format: Format::Json,
                parts,
                ..ReportOptions::default()
            })
        }),
    })
}

/// `work` over every item, on as many threads as there are cores, results
/// in the items' order.
fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(items.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        mine.push((i, work(item)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|d| d.0);
    done.into_iter().map(|d| d.1).collect()
}

//! How other tools know a node of a model: what a runtime's profile, a
//! viewer or an annotated copy calls it. Front ends list their nodes so;
//! the stages that meet other tools' names (the profile join) read these,
//! not the front end's own records.

/// A node of a model's main graph as the file has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeIdentity {
    /// Its place in the graph's node list (onnxruntime names an unnamed
    /// node `<op_type>_<index>`).
    pub index: usize,
    /// Its name in the file (empty when unnamed).
    pub name: String,
    pub op: String,
    /// The names of its outputs, absent ones left out.
    pub outputs: Vec<String>,
}

impl NodeIdentity {
    /// The name onnxruntime gives the node: its own, or `<op>_<index>`.
    pub fn runtime_name(&self) -> String {
        if self.name.is_empty() {
            format!("{}_{}", self.op, self.index)
        } else {
            self.name.clone()
        }
    }
}

//! Every operator shape inference supports has a cost rule.

#[test]
fn every_shape_supported_operator_has_a_cost_rule() {
    let rules = c3::rules::RuleSet::builtin().unwrap();
    let missing: Vec<String> = c3::shape::supported_ops()
        .into_iter()
        .filter(|(d, o)| rules.get(d, o).is_none())
        .map(|(d, o)| c3::rules::rule::qualified(d, o))
        .collect();
    assert!(
        missing.is_empty(),
        "{} operators without a cost rule: {}",
        missing.len(),
        missing.join(", ")
    );
}

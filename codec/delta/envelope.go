package delta

// EnvelopeKind names Delta's commit-message payloads in the envelope of
// the distributed commit (codec/envelope): Delta `add` actions, one JSON
// line each ({"add":{...}}, as a commit file holds them), what a Spark or
// Delta Kernel coordinator can commit itself.
const EnvelopeKind = "delta"

// ActionsVersion is the serializer version of those payloads.
const ActionsVersion = 1

# Sourced by the scripts that build a test or an example of their own (MCP
# conformance, the OpenAI-compatible end-to-end tests).
#
# test_build_scope PACKAGE sets the array `scope` to the cargo arguments that
# select PACKAGE's targets. Under test.sh (GENKIT_TEST_FEATURES set) that is
# the whole workspace with the test build's features, as the test build
# compiled it: the target is found built, with nothing compiled again and no
# wait on cargo's lock beside the tests. Run alone, it is `-p PACKAGE`.
test_build_scope() {
  scope=(-p "$1")
  [ -z "${GENKIT_TEST_FEATURES:-}" ] || scope=(--workspace --features "$GENKIT_TEST_FEATURES")
}

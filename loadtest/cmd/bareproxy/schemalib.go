//go:build schemalib

package main

// Built with -tags schemalib, the bare proxy loads the JSON Schema library
// toolguard validates with. The library compiles the meta-schema of every
// draft when it loads and holds them for the process's life: the bare
// proxy then carries that live heap as toolguard does, and the collector's
// cost of it can be told from the rest of toolguard's.
import _ "github.com/santhosh-tekuri/jsonschema/v5"

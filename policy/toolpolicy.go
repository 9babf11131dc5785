package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ToolPolicy overrides the global settings for the calls of one tool. A zero
// field (an empty string, a nil pointer) keeps the global setting.
type ToolPolicy struct {
	Mode            Mode
	MaxReasks       *int
	OnFailure       OnFailure
	SchemaRepair    *bool
	ForceToolChoice *bool
	TextCalls       TextCalls
	// FallbackModel names the model of this tool's last re-ask;
	// Fallback false keeps its last re-ask off any fallback.
	FallbackModel string
	Fallback      *bool
}

// ToolPolicies maps tool names to their policies. Its text form, the value of
// TOOLGUARD_TOOL_POLICIES, is one entry per tool separated by semicolons,
// each a tool name, a colon and comma-separated key=value settings:
//
//	click:mode=reask,max_reasks=1,on_failure=drop;search:mode=validate
//
// One line, no quoting and no nesting, so it fits a Kubernetes env value;
// spaces and newlines around entries and settings are ignored.
type ToolPolicies map[string]ToolPolicy

// toolNameText is what OpenAI accepts as a function name, plus dots and
// colons minus the colon (it separates the name from its settings); its
// length, at most maxToolName, is checked apart (toolName): a counted
// repetition compiles to a program of each of its steps.
var toolNameText = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// maxToolName is the longest name OpenAI accepts for a function.
const maxToolName = 128

// toolName reports whether name is a tool name a policy may hold.
func toolName(name string) bool { return len(name) <= maxToolName && toolNameText.MatchString(name) }

// policyKeys lists the settings an entry may hold, for error messages.
const policyKeys = "mode, max_reasks, on_failure, schema_repair, force_tool_choice, text_calls, fallback, fallback_model"

// UnmarshalText parses the TOOLGUARD_TOOL_POLICIES format. Its errors name
// the entry and say what is wrong with it.
func (p *ToolPolicies) UnmarshalText(text []byte) error {
	out := ToolPolicies{}
	for i, entry := range strings.Split(string(text), ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		tp, name, err := parseToolPolicy(entry, out)
		if err != nil {
			return fmt.Errorf("entry %d (%q): %w; the format is tool:key=value,key=value;tool:... with keys %s", i+1, entry, err, policyKeys)
		}
		out[name] = tp
	}
	*p = out
	return nil
}

func parseToolPolicy(entry string, seen ToolPolicies) (ToolPolicy, string, error) {
	var tp ToolPolicy
	name, settings, ok := strings.Cut(entry, ":")
	name = strings.TrimSpace(name)
	if !ok {
		return tp, name, fmt.Errorf("no colon after the tool name")
	}
	if !toolName(name) {
		return tp, name, fmt.Errorf("%q is not a tool name (letters, digits, _ . -)", name)
	}
	if _, dup := seen[name]; dup {
		return tp, name, fmt.Errorf("tool %q has a policy already", name)
	}
	set := map[string]bool{}
	for _, kv := range strings.Split(settings, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return tp, name, fmt.Errorf("setting %q is not key=value", strings.TrimSpace(kv))
		}
		if set[k] {
			return tp, name, fmt.Errorf("%s is set twice", k)
		}
		set[k] = true
		if err := tp.set(k, v); err != nil {
			return tp, name, err
		}
	}
	if tp.FallbackModel != "" && tp.Fallback != nil && !*tp.Fallback {
		return tp, name, fmt.Errorf("fallback=off and fallback_model contradict each other")
	}
	return tp, name, nil
}

func (tp *ToolPolicy) set(k, v string) error {
	switch k {
	case "mode":
		tp.Mode = Mode(v)
		if !tp.Mode.Valid() {
			return fmt.Errorf("mode %q is not one of repair, reask, validate, off", v)
		}
	case "max_reasks":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxReasksLimit {
			return fmt.Errorf("max_reasks %q is not a whole number from 0 to %d", v, MaxReasksLimit)
		}
		tp.MaxReasks = &n
	case "on_failure":
		tp.OnFailure = OnFailure(v)
		if !tp.OnFailure.Valid() {
			return fmt.Errorf("on_failure %q is not one of error, passthrough, drop", v)
		}
	case "schema_repair", "force_tool_choice":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s %q is not true or false", k, v)
		}
		if k == "schema_repair" {
			tp.SchemaRepair = &b
		} else {
			tp.ForceToolChoice = &b
		}
	case "text_calls":
		tp.TextCalls = TextCalls(v)
		if !tp.TextCalls.Valid() {
			return fmt.Errorf("text_calls %q is not one of off, marked, json, all", v)
		}
	case "fallback", "fallback_model":
		return tp.setFallback(k, v)
	default:
		return fmt.Errorf("unknown setting %q", k)
	}
	return nil
}

// MarshalText renders the policies in the TOOLGUARD_TOOL_POLICIES format,
// tools in name order.
func (p ToolPolicies) MarshalText() ([]byte, error) {
	names := make([]string, 0, len(p))
	for name := range p {
		names = append(names, name)
	}
	slices.Sort(names)
	var entries []string
	for _, name := range names {
		tp := p[name]
		var kv []string
		if tp.Mode != "" {
			kv = append(kv, "mode="+string(tp.Mode))
		}
		if tp.MaxReasks != nil {
			kv = append(kv, "max_reasks="+strconv.Itoa(*tp.MaxReasks))
		}
		if tp.OnFailure != "" {
			kv = append(kv, "on_failure="+string(tp.OnFailure))
		}
		if tp.SchemaRepair != nil {
			kv = append(kv, "schema_repair="+strconv.FormatBool(*tp.SchemaRepair))
		}
		if tp.ForceToolChoice != nil {
			kv = append(kv, "force_tool_choice="+strconv.FormatBool(*tp.ForceToolChoice))
		}
		if tp.TextCalls != "" {
			kv = append(kv, "text_calls="+string(tp.TextCalls))
		}
		kv = append(kv, tp.fallbackText()...)
		entries = append(entries, name+":"+strings.Join(kv, ","))
	}
	return []byte(strings.Join(entries, ";")), nil
}

// problems checks policies built in code, which did not go through
// UnmarshalText.
func (p ToolPolicies) problems() []string {
	var out []string
	for name, tp := range p {
		switch {
		case !toolName(name):
			out = append(out, fmt.Sprintf("%q is not a tool name", name))
		case tp.Mode != "" && !tp.Mode.Valid():
			out = append(out, fmt.Sprintf("%s: mode %q is not one of repair, reask, validate, off", name, tp.Mode))
		case tp.MaxReasks != nil && (*tp.MaxReasks < 0 || *tp.MaxReasks > MaxReasksLimit):
			out = append(out, fmt.Sprintf("%s: max_reasks %d is out of range: 0 to %d", name, *tp.MaxReasks, MaxReasksLimit))
		case tp.OnFailure != "" && !tp.OnFailure.Valid():
			out = append(out, fmt.Sprintf("%s: on_failure %q is not one of error, passthrough, drop", name, tp.OnFailure))
		case tp.TextCalls != "" && !tp.TextCalls.Valid():
			out = append(out, fmt.Sprintf("%s: text_calls %q is not one of off, marked, json, all", name, tp.TextCalls))
		}
	}
	slices.Sort(out)
	return out
}

// Rules are the settings that apply to the calls of one tool: the global
// ones with the tool's policy over them.
type Rules struct {
	Mode            Mode
	MaxReasks       int
	OnFailure       OnFailure
	SchemaRepair    bool
	ForceToolChoice bool
	TextCalls       TextCalls
	// Fallback is whether the tool's last re-ask may go to the fallback, and
	// FallbackModel the model it names there ("" keeps the request's).
	Fallback      bool
	FallbackModel string
}

// Reasks is how many re-asks a failing call of the tool allows.
func (r Rules) Reasks() int {
	if !r.Mode.Reasks() {
		return 0
	}
	return r.MaxReasks
}

// Rules returns the settings for the calls of the named tool. A tool without
// a policy, or a name that no tool declares, gets the global settings.
func (c Config) Rules(tool string) Rules {
	r := Rules{
		Mode:            c.Mode,
		MaxReasks:       c.MaxReasks,
		OnFailure:       c.OnFailure,
		SchemaRepair:    c.SchemaRepair,
		ForceToolChoice: c.ForceToolChoiceOnLastReask,
		TextCalls:       c.TextCalls,
		Fallback:        c.FallbackConfigured(),
		FallbackModel:   c.FallbackModel,
	}
	tp, ok := c.ToolPolicies[tool]
	if !ok || c.Mode == ModeOff {
		return r
	}
	r.Fallback, r.FallbackModel = tp.fallback(r.Fallback, r.FallbackModel)
	if tp.Mode != "" {
		r.Mode = tp.Mode
	}
	if tp.MaxReasks != nil {
		r.MaxReasks = *tp.MaxReasks
	}
	if tp.OnFailure != "" {
		r.OnFailure = tp.OnFailure
	}
	if tp.SchemaRepair != nil {
		r.SchemaRepair = *tp.SchemaRepair
	}
	if tp.ForceToolChoice != nil {
		r.ForceToolChoice = *tp.ForceToolChoice
	}
	if tp.TextCalls != "" {
		r.TextCalls = tp.TextCalls
	}
	return r
}

// rank orders the modes by how much work they allow: each mode does a
// subset of what the next one does.
func (m Mode) rank() int {
	switch m {
	case ModeRepair:
		return 3
	case ModeReask:
		return 2
	case ModeValidate:
		return 1
	}
	return 0
}

// Cap returns m, or limit if limit allows less work.
func (m Mode) Cap(limit Mode) Mode {
	if limit.rank() < m.rank() {
		return limit
	}
	return m
}

// rank orders the failure behaviours from the most lenient to the strictest.
func (f OnFailure) rank() int {
	switch f {
	case FailError:
		return 2
	case FailDrop:
		return 1
	}
	return 0
}

// Stricter returns whichever of f and g is stricter: error over drop over
// passthrough. A response with failing calls of several tools gets the
// strictest behaviour among them.
func (f OnFailure) Stricter(g OnFailure) OnFailure {
	if g.rank() > f.rank() {
		return g
	}
	return f
}

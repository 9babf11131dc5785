// Package recording reads the recorded OpenAI exchanges kept in
// testdata/openai-recordings (go-vcr cassettes), so tests can replay what a
// real provider sends.
package recording

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Interaction is one recorded request and its response.
type Interaction struct {
	Request struct {
		Method  string              `yaml:"method"`
		URL     string              `yaml:"url"`
		Headers map[string][]string `yaml:"headers"`
		Body    string              `yaml:"body"`
	} `yaml:"request"`
	Response struct {
		Code    int                 `yaml:"code"`
		Headers map[string][]string `yaml:"headers"`
		Body    string              `yaml:"body"`
	} `yaml:"response"`
}

// Header returns the response's recorded headers, without the ones that
// describe the recorded transfer rather than the message.
func (i Interaction) Header() http.Header {
	h := http.Header{}
	for k, v := range i.Response.Headers {
		switch http.CanonicalHeaderKey(k) {
		case "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection":
			continue
		}
		h[http.CanonicalHeaderKey(k)] = v
	}
	return h
}

// Load reads the interactions of one cassette, named without its extension
// (for example "chat-tools"), from dir.
func Load(dir, name string) ([]Interaction, error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".yaml"))
	if err != nil {
		return nil, err
	}
	var c struct {
		Interactions []Interaction `yaml:"interactions"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(c.Interactions) == 0 {
		return nil, fmt.Errorf("%s: no interactions", name)
	}
	return c.Interactions, nil
}

package main

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestLongHistoryIsAbout40KB(t *testing.T) {
	body := chatBody("valid", false, true)
	var v struct{ Messages []json.RawMessage }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(body) < 40<<10 || len(body) > 48<<10 || len(v.Messages) < 100 {
		t.Errorf("%d bytes, %d messages", len(body), len(v.Messages))
	}
}

func TestPickArmsAddsWhatAnArmIsMeasuredAgainst(t *testing.T) {
	arms, err := pickArms(config{arms: "history-toolguard,stream-toolguard"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arms {
		names = append(names, a.name)
	}
	want := []string{"direct", "reverseproxy", "stream-direct", "stream-reverseproxy", "stream-toolguard",
		"history-direct", "history-reverseproxy", "history-toolguard"}
	if !slices.Equal(names, want) {
		t.Errorf("arms %v, want %v", names, want)
	}
	if _, err := pickArms(config{arms: "no-such-arm"}); err == nil {
		t.Error("an unknown arm was accepted")
	}
}

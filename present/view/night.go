package view

import (
	"time"

	"github.com/lpmbisect/lpmbisect/history"
)

// NightSummary is one series' night as the morning report tells it:
// package nightly fills it.
type NightSummary struct {
	Series  history.Series     `json:"series"`
	Night   history.Night      `json:"night"`
	Rows    []history.NightRow `json:"rows"`
	Outcome string             `json:"outcome"` // quiet, inconclusive, regression, failure
	// Alerts are the night's own verdicts worth reading, one line each.
	Alerts []string `json:"alerts"`
	// Changes are the change points the night added, moved, confirmed or
	// withdrew, with what happened to each.
	Changes []NightChange `json:"changes"`
	// Excursions are the nights the change-point pass found tonight to lie
	// far from the nights on both sides of them (package changepoint);
	// Alerts say each in a line.
	Excursions []history.Excursion `json:"excursions,omitempty"`
	Mail       string              `json:"mail,omitempty"` // the mail body written, if any
	Took       time.Duration       `json:"took_ns"`
	Booted     int                 `json:"booted"`
	Resumed    int                 `json:"resumed"`
}

// NightChange is a change point with what the night did to it: "new",
// "moved", "confirmed", "updated" or "withdrawn".
type NightChange struct {
	What  string              `json:"what"`
	Point history.ChangePoint `json:"point"`
}

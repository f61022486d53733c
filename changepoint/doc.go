// Package changepoint finds the nights at which a nightly benchmark series
// moved to a new level.
package changepoint

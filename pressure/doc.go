// Package pressure runs the experiments that show how a serving configuration behaves past
// the happy path: a load ladder that steps the arrival rate up until a boundary is crossed
// (the saturation point and the shape of the overload), a burst above capacity and the time
// to recover from it, an engine killed under load and restarted (time to ready, time to meet
// the SLO again, what the clients saw), and an abrupt shift of the class mix.
//
// Every experiment is bounded in time and in requests, sends traffic only to the engine it
// was given (one frontier started on loopback, or a URL the user named), and stops every
// engine it started. Load comes from package workload (one client, one clock, one set of
// metric names); engines come from package launcher. Results are record.Pressure values,
// which search/storage keeps in the study database and package report renders. Deciding
// which configurations to measure is left to the caller.
package pressure

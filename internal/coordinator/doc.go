// Package coordinator allocates producer ids and (as it grows) runs the
// transaction and group coordinators. Its state machines are plain structs;
// its persisted state lives in the data directory.
package coordinator

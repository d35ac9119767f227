// Package flightframe decodes Flight's FlightData messages without the
// copies protobuf makes: the server's codec (uploads) and the codec of a
// flightsql catalog's connection to its upstream (results) share it.
package flightframe

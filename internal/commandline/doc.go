// Package commandline words what the airlock core returns as data (a
// refusal's remedy, the steps that resolve an error) as the airlock
// commands a person types. The command line says everything in these
// words; the other front ends use them where only the person at the
// terminal can act: a hook telling its user, the MCP server and the review
// page passing on an error whose remedy is a command.
//
// The core never says a command line: it names a step in its own API's
// terms (airlock.Step.String), and Message puts these words in place of
// those, so that what a person reads is what the command line has always
// said.
package commandline

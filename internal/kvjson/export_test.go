package kvjson

// KeyMatches is keyMatches, for the tests.
var KeyMatches = keyMatches

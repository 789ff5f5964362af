// Package ingest is the primary's publish side: who may publish (stream
// keys and signed tokens), what happens when a second broadcaster claims a
// live name, and how a broadcaster's messages enter the stream's hub.
package ingest

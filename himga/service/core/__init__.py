"""The modules of the transport-neutral core; its API, and what it promises, are described in
`himga.core`, the name it is imported by."""

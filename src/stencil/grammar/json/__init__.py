"""JSON front-ends: any JSON value (:mod:`.value`) and JSON Schema (:mod:`.schema`)."""

"""JSON Schema, phase 2: reading schema objects into the normalized model. :mod:`.context` holds
one compilation's state; :mod:`.types` dispatches a schema object's keywords to the readers of
arrays, objects and applicators (:mod:`.arrays`, :mod:`.objects`, :mod:`.compose`); :mod:`.disjoint`
decides when two normalized schemas cannot share an instance. Imports ``core`` and ``lang``."""

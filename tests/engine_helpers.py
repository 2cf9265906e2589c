"""Helpers shared by the engine tests."""


class StopAt:
    """A consumer that asks the engine to stop (as Ctrl-C does) once ``position`` is proven."""

    def __init__(self, position: int):
        self.position = position

    def attach(self, engine) -> None:
        self.engine = engine

    def accept(self, first, values) -> None:
        if first + len(values) >= self.position:
            self.engine.request_stop()

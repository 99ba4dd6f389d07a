"""The fused stateless operators: map, flat_map, filter and sink (runtime/operators.py explains
the fusing). Each builds, once per task epoch, a closure that calls the user function and then
the next receiver directly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from samza_nb.runtime.operators import Receiver, _FusedImpl

__all__ = ["FilterImpl", "FlatMapImpl", "MapImpl", "SinkImpl"]


class MapImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        impl = self
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                result = fn(message)
            except Exception as error:
                failed(error)
                return
            # A map returning None drops the message (Samza's rule), counted.
            if result is not None:
                emit(result)
            else:
                impl.dropped += 1

        self._counted = lambda: count
        return receive


class FlatMapImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        impl = self
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                results = fn(message)
            except Exception as error:
                failed(error)
                return
            if results is not None:
                for result in results:
                    emit(result)
            else:
                impl.dropped += 1

        self._counted = lambda: count
        return receive


class FilterImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                keep = fn(message)
            except Exception as error:
                failed(error)
                return
            if keep:
                emit(message)

        self._counted = lambda: count
        return receive


class SinkImpl(_FusedImpl):
    def _fuse(self, emit: Receiver, failed: Callable[[Exception], Any]) -> Receiver:
        fn = self.spec.fn  # type: ignore[attr-defined]
        count = 0

        def receive(message: Any) -> None:
            nonlocal count
            count += 1
            try:
                fn(message)
            except Exception as error:
                failed(error)

        self._counted = lambda: count
        return receive

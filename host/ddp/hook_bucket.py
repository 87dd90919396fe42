"""One DDP bucket through the hook (see :mod:`.hook`).

:class:`_Piece` is a run of one group's parameters in a bucket; the mixin
:class:`_FabricBuckets` lays a bucket out by group
(:meth:`~_FabricBuckets._pieces`) and aggregates it
(:meth:`~_FabricBuckets.communicate`): FP32 pieces by an all-reduce, low-bit
pieces through the pool and the controllers' device models (write, barrier,
read; a level-2 write and read with several controllers), and on FP32 steps
the warm-up diagnostics (:meth:`~_FabricBuckets.diagnostics`).
"""

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from neuron_fabric.host import golden
from neuron_fabric.host.control import FP32 as FP32_MODE, MODE_POLICY
from neuron_fabric.host.device import read_response
from neuron_fabric.contract.facts import COUNT_LANE_BITS, Format, Layout, count_geometry
from neuron_fabric.host.ddp.pack import decode_direction, decode_lanes, pack_counts, pack_signs
from neuron_fabric.host.ddp.pool import Window
from neuron_fabric.host.ddp.hook_devices import _sync


@dataclass
class _Piece:
    """A run of one group's parameters in a bucket."""
    group: str
    start: int          # in the bucket's buffer, elements
    stop: int
    cursor: int         # the run's first element in the group's window (aligned)
    params: list = None  # (id, elements) of its parameters, in order

    @property
    def n(self):
        return self.stop - self.start


class _FabricBuckets:
    """:class:`~.hook.FabricState`'s work on one bucket."""

    def _pieces(self, bucket):
        params = bucket.parameters()
        key = tuple(id(p) for p in params)
        known = self._layouts.get(bucket.index())
        if known is not None and known[0] == key:
            return known[1]
        if known is not None:     # DDP rebuilt its buckets: lay every window out anew
            self._layouts.clear()
            self._cursor.clear()
        buf = bucket.buffer()
        size = buf.element_size()
        pieces = []
        for p, g in zip(params, bucket.gradients()):
            name = self._group_of.get(id(p))
            if name is None:
                raise ValueError(f"bucket {bucket.index()}: a parameter of shape "
                                 f"{tuple(p.shape)} is in no group")
            start = (g.data_ptr() - buf.data_ptr()) // size
            if pieces and pieces[-1].group == name and pieces[-1].stop == start:
                pieces[-1].stop += g.numel()
                pieces[-1].params.append((id(p), g.numel()))
            else:
                pieces.append(_Piece(name, start, start + g.numel(), 0, [(id(p), g.numel())]))
        for piece in pieces:
            piece.cursor = self._cursor.get(piece.group, 0)
            self._cursor[piece.group] = piece.cursor + -(-piece.n // self._align) * self._align
        self._layouts[bucket.index()] = (key, pieces)
        return pieces

    # -- one bucket ---------------------------------------------------------------------

    def communicate(self, bucket):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            out = self._communicate(bucket)
        finally:
            self.hook_s += time.perf_counter() - t0
            self.hook_cpu_s += time.thread_time() - c0
        if bucket.is_last():
            self.end_step()
        return out

    def _communicate(self, bucket):
        buf = bucket.buffer()
        pieces = self._pieces(bucket)
        low = [p for p in pieces if self._low[p.group] and not self.faulted]
        fp = [p for p in pieces if p not in low]
        if not low and not (self.diagnose and not self.faulted):
            self.traffic.fp32_elements += buf.numel()
            return self._fp32_future(buf)
        results = self._low_bit(buf, low) if low else {}
        if results is None:                 # a fault: this bucket on FP32 after all
            fp, results = pieces, {}
        if fp:
            flat = torch.cat([buf[p.start:p.stop] for p in fp]) if len(fp) > 1 else \
                buf[fp[0].start:fp[0].stop].clone()
            flat.div_(self.world)
            self._all_reduce("FP32 all-reduce", flat)
            self.traffic.fp32_elements += flat.numel()
            at = 0
            for p in fp:
                results[id(p)] = flat[at:at + p.n]
                at += p.n
            if self.diagnose and not low and not self.faulted:
                self._diagnostics(buf, fp, results)
        for p in pieces:
            buf[p.start:p.stop].copy_(results[id(p)])
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    def _fp32_future(self, buf):
        buf.div_(self.world)
        try:
            work = dist.all_reduce(buf, group=self.group, async_op=True)
        except Exception as err:
            raise self._lost("FP32 all-reduce", err) from err

        def done(fut):
            try:
                return fut.value()[0]
            except Exception as err:
                raise self._lost("FP32 all-reduce", err) from err
        return work.get_future().then(done)

    def _signs_source(self, g, piece):
        """The values whose signs this rank packs (error feedback adds its residual)."""
        if not self.config.error_feedback:
            return g
        e = torch.cat([self._residual.get(pid, torch.zeros(n)) for pid, n in piece.params])
        p = g + e
        residual = p - p.abs().mean() * torch.sign(p)
        at = 0
        for pid, n in piece.params:            # kept per parameter: DDP may rebuild buckets
            self._residual[pid] = residual[at:at + n]
            at += n
        return p

    def _low_bit(self, buf, low):
        """Aggregate the low-bit pieces; ``{id(piece): direction}``, or None
        when a rank reported a fault (every rank then takes FP32)."""
        c, r, w = self.config, self.ranks_per_controller, self.workers
        lanes1, lb = self._lanes1, self._lb
        flags = torch.zeros(1 + len(low), dtype=torch.float64)
        if self.pending_fault is not None:
            flags[0] = 1
        plan = []
        for pool in (self.pool1, self.pool2):
            if pool is not None:
                pool.begin()
        try:
            for i, p in enumerate(low):
                g = buf[p.start:p.stop]
                base, _ = self.windows1[p.group]
                lines = -(-p.n // lanes1)
                window = Window(base + (p.cursor // lanes1) * lb, lines)
                seg = pack_signs(self._signs_source(g, p), lines * lanes1)
                self.traffic.pool_write += self.pool1.write(window, self.local, seg)
                self.traffic.low_elements += p.n
                if c.scale:
                    flags[1 + i] = float(g.abs().mean())
                plan.append((p, window))
        except Exception as err:
            self.pending_fault = f"rank {self.rank}: write: {type(err).__name__}: {err}"
            flags[0] = 1
        self._all_reduce("barrier before the read", flags)
        if flags[0]:
            return self._fallback()
        out, level2 = {}, []
        for i, (p, window) in enumerate(plan):
            resp = self._read_level1(p, window)
            if self.controllers == 1:
                out[id(p)] = self._finish(p, resp, w, r, self.pad_pairs, flags[1 + i])
            else:
                level2.append((i, p, decode_lanes(resp, w, Format.COUNT, p.n)))
        if self.controllers > 1:
            self._write_level2(level2)
            check = self._all_reduce("barrier before the level-2 read", torch.tensor(
                [1.0 if self.pending_fault else 0.0], dtype=torch.float64))
            if check[0]:
                return self._fallback()
            for i, p, _ in level2:
                resp = self._read_level2(p)
                out[id(p)] = self._finish(p, resp, COUNT_LANE_BITS, self.controllers * r,
                                          self.controllers * self.pad_pairs, flags[1 + i])
        return out

    def _read(self, level, device, addr, lines, raw):
        """Read ``raw`` (stored at ``addr``) through ``device``.  When the
        device fails the read (a memory error), the rank computes the same
        response in software from the lines and the region's configuration
        (``device.read_response``, the model's own rule), so every rank
        still holds the same aggregate this step; the fault is reported at
        the next barrier, where every rank goes FP32."""
        device.poke(addr, raw)
        try:
            resp = _sync(device.read_lines(addr, lines))
        except Exception as err:
            if self.pending_fault is None:
                self.pending_fault = f"rank {self.rank}: level-{level} read: " \
                                     f"{type(err).__name__}: {err}"
            cfg, index = device.read_config(addr)
            resp = read_response(device.params, device.profile, raw, index, cfg)
        self.traffic.pool_read += resp.size
        return resp

    def _pool_read(self, pool, window):
        """``pool.read(window)``, the bytes it all-gathered counted in
        ``traffic.gathered`` (a shared-memory pool gathers none)."""
        before = getattr(pool, "sent", 0)
        lines = pool.read(window)
        self.traffic.gathered += getattr(pool, "sent", 0) - before
        return lines

    def _read_level1(self, p, window):
        lines = self._pool_read(self.pool1, window)
        if self.config.layout == Layout.ELEMENT_MAJOR:
            lines = golden.to_element_major(lines, self.workers)
        return self._read(1, self.dev1, window.offset, window.lines, lines)

    def _write_level2(self, level2):
        bits, _ = count_geometry(self.operand)
        for _, p, counts in level2:
            base, _ = self.windows2[p.group]
            lines = -(-p.n // self._lanes2)
            window = Window(base + (p.cursor // self._lanes2) * self._lb, lines)
            # A controller's counts are written once, by its first rank; across
            # hosts each rank all-gathers them from its peers of the same local
            # index in the other controllers (every rank of a controller holds them).
            if self.local != 0 and self.pool_kind == "shm":
                self.pool2.skip(window)
                continue
            padded = np.zeros(lines * self._lanes2, dtype=np.uint8)
            padded[:p.n] = counts.numpy()
            moved = self.pool2.write(window, self.controller, pack_counts(padded, bits))
            if self.local == 0:
                self.traffic.pool_write += moved

    def _read_level2(self, p):
        base, _ = self.windows2[p.group]
        lines = -(-p.n // self._lanes2)
        addr = base + (p.cursor // self._lanes2) * self._lb
        return self._read(2, self.dev2, addr, lines, self._pool_read(self.pool2, Window(addr, lines)))

    def _finish(self, p, resp, lane_bits, voters, pads, mean_abs):
        fmt = self.regions.policies[p.group].format
        d = decode_direction(resp, lane_bits, fmt, p.n, voters, pads)
        if self.config.scale:
            d = d * float(mean_abs / self.world)
        return d

    # -- warm-up diagnostics ---------------------------------------------------------------

    def _diagnostics(self, buf, pieces, means):
        """Cosine of each low-bit mode's aggregate of every rank's signs with
        the FP32 mean, accumulated per group (golden model over all ranks)."""
        lines_c = self._lanes2
        for p in pieces:
            n_pad = -(-p.n // 64) * 64
            mine = torch.from_numpy(pack_signs(buf[p.start:p.stop], n_pad))
            parts = [torch.empty_like(mine) for _ in range(self.world)]
            self._collective("diagnostic all-gather",
                             lambda: dist.all_gather(parts, mine, group=self.group))
            self.traffic.diag_elements += p.n
            signs = np.unpackbits(np.stack([t.numpy() for t in parts]), axis=1,
                                  bitorder="little")[:, :p.n].astype(bool)
            mean = means[id(p)].double()
            first = p.cursor // lines_c
            for mode in MODE_POLICY:
                if mode == FP32_MODE:
                    continue
                pol = MODE_POLICY[mode]
                n_lines = -(-p.n // lines_c)
                phase = golden.line_phase(np.arange(first, first + n_lines), lines_c, pol.period)
                resp = golden.transform_wide(signs, pol.mode, pol.format, pol.gate_kind,
                                             pol.period, pol.keep, pol.threshold, phase,
                                             line_bits=self.config.line_bits)
                d = torch.from_numpy(golden.decode_counts(resp, pol.format, p.n)).double()
                acc = self._diag.setdefault(p.group, {}).setdefault(mode, [0.0, 0.0, 0.0])
                acc[0] += float(d @ mean)
                acc[1] += float(d @ d)
                acc[2] += float(mean @ mean)

    def diagnostics(self):
        """``{group: {mode: cosine}}`` of the last step (empty when none were taken)."""
        out = {}
        for g, per in self._last_diag.items():
            out[g] = {m: (a[0] / math.sqrt(a[1] * a[2]) if a[1] * a[2] > 0 else 0.0)
                      for m, a in per.items()}
        return out

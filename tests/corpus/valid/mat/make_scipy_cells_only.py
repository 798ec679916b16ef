#!/usr/bin/python3
"""Writes scipy_cells_only.mat: a MAT v5 file (SciPy) whose channel data are in a cell, as
Verasonics scanners save them (RcvData{1}, int16 samples x channels x frames), with a 1 x 3 struct
array S (S(k).data, S(k).name), a struct P holding a 2 x 1 struct array P.rx (P.rx(k).data) and a
cell P.c, and no numeric variable at the top level. read_mat without --var must offer
RcvData{1}, S(1).data, P.rx(1).data and P.c{1}, and read each by that name
(IoMatIndexingScipy.CellsOnlyFileOffersAndReadsItsElements); it also seeds the mat_fields
fuzzer. Made once with Debian's python3-scipy 1.10; run from this directory."""
import numpy as np
import scipy.io as sio

rcv = np.empty((1, 1), dtype=object)
rcv[0, 0] = (np.arange(24, dtype=np.int16) - 12).reshape(4, 3, 2, order='F')
S = np.array([(np.array([[10.0, 11.0]]), '1'), (np.array([[20.0, 21.0]]), '2'),
              (np.array([[30.0, 31.0]]), '3')], dtype=[('data', 'O'), ('name', 'O')]).reshape(1, 3)
rx = np.array([(np.array([[1.0, 1.0]]),), (np.full((2, 2), 2.0),)], dtype=[('data', 'O')]).reshape(2, 1)
c = np.empty((1, 1), dtype=object)
c[0, 0] = np.array([[7.0, 8.0]])
sio.savemat('scipy_cells_only.mat', {'RcvData': rcv, 'S': S, 'P': {'rx': rx, 'c': c}}, oned_as='row')

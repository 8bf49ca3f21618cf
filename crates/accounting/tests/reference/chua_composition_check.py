"""Independent check of the multi-epoch Chua et al. lower bound (Annamalai et al. 2024 §6.1): numpy
convolution of the bucketed max-statistic pair, losses rounded down and up to 1e-3.
Run: /tmp/dpacc/bin/python crates/accounting/tests/reference/chua_composition_check.py
Printed for sigma=1.0, T=100, E=3, delta=1e-5: floor 5.885025, ceil 5.888025 (P||Q order).
"""
import numpy as np
from scipy.stats import norm
def masses(sigma,T,mu,edges):
    lf = norm.logcdf((edges-mu)/sigma)+(T-1)*norm.logcdf(edges/sigma)
    F=np.exp(lf); 
    return np.diff(np.concatenate([[0.0],F,[1.0]]))
def eps_of(losses,p,delta):
    o=np.argsort(-losses); l=losses[o]; pp=p[o]
    best=0
    # delta(eps)=sum p (1-e^{eps-l})_+
    lo,hi=0,60
    for _ in range(100):
        m=(lo+hi)/2
        d=np.sum(pp*np.clip(1-np.exp(m-l),0,None))
        if d>delta: lo=m
        else: hi=m
    return hi
sigma,T,E=1.0,100,3
c_lo,c_hi=-10*sigma, 2+(10+np.sqrt(2*np.log(T)))*sigma
edges=np.arange(c_lo,c_hi+1e-9,0.01)
p=masses(sigma,T,2,edges); q=masses(sigma,T,1,edges)
ok=(p>0)&(q>0); p=p[ok]; q=q[ok]; l=np.log(p/q)
for dirn in [0,1]:
    P,L=(p,l) if dirn==0 else (q,-l)
    h=1e-3
    for rnd in [np.floor,np.ceil]:
        idx=rnd(L/h).astype(int); off=idx.min(); pm=np.bincount(idx-off,weights=P)
        acc=pm.copy(); 
        for _ in range(E-1): acc=np.convolve(acc,pm)
        losses=(np.arange(len(acc))+E*off)*h
        print(dirn, rnd.__name__, eps_of(losses,acc,1e-5))

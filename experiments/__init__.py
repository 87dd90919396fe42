"""The paper's experiments on the host runtime: virtual-worker training
(``train``), the control-plane pilots (``pilots``) and the multi-hop study."""

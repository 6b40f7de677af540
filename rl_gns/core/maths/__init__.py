"""The maths of the core, importing numpy and scipy alone: the noise-scale estimator and its intervals
(``noise_scale``), the tradeoff fit (``tradeoff``), targets and steps to them (``targets``), the prediction criterion
(``criterion``), throughput (``throughput``), rollout and measurement sizes (``batching``), log names (``names``),
measurement schemes (``schemes``), the validated predictors' advice (``advice``) and the engines' settings
(``settings``)."""

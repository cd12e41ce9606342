// experiment.js: a result of jitterlab experiment (jitterlab.experiment, docs/json.md).

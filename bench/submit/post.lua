-- wrk script: POST /v1/jobs with one small gang job per request.
-- The token comes from the environment (MUSTER_TOKEN).
wrk.method = "POST"
wrk.path = "/v1/jobs"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("MUSTER_TOKEN")
wrk.body = '{"tenant":"root","name":"bench","nodes":2,"gpus_per_node":8,' ..
           '"command":["torchrun","--nproc-per-node=8","train.py"],"time_limit":"1:00:00",' ..
           '"labels":{"bench":"submit"}}'

local non201 = 0
response = function(status, headers, body)
  if status ~= 201 then non201 = non201 + 1 end
end

select dp_count(*) as c0 from public.patients;
select ref_0.region as c0, dp_count(*) as c1 from public.patients as ref_0 group by ref_0.region;
select dp_sum(ref_0.age, 0, 100, dp_laplace(0.001)) as c0 from public.patients as ref_0 where ref_0.age > 40;
select ref_0.ward as c0, dp_count(*) as c1 from public.visits as ref_0 group by ref_0.ward;
select dp_sum(ref_0.amount, 0, 100000, 'laplace(epsilon=0.001)') as c0 from public.visits as ref_0 join public.wards as ref_1 on ref_1.ward = ref_0.ward where ref_1.floor < 3;
select public.ward_dp_count('cardio') as c0;
